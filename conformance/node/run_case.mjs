// One conformance case through the Vercel AI SDK: reads {"case": <case file>,
// "base_url": <replay>} on stdin, writes what a host of the SDK observes on stdout:
// {stop, raw, text, tool_calls, ran, error}. The case's tools are local functions
// that count their calls (ran); retries are off (maxRetries: 0).
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";

const FINISH = {
  stop: "end_turn",
  "tool-calls": "tool_use",
  length: "max_output",
  "content-filter": "refusal",
  error: "interrupted",
  other: "other",
  unknown: "other",
};

function model(kase, baseURL) {
  const apiKey = "test-key";
  if (kase.protocol === "anthropic") return createAnthropic({ baseURL, apiKey })("test-model");
  if (kase.protocol === "gemini") return createGoogleGenerativeAI({ baseURL, apiKey })("test-model");
  const openai = createOpenAI({ baseURL, apiKey });
  return kase.protocol === "openai-responses" ? openai.responses("test-model") : openai.chat("test-model");
}

function rawOf(value) {
  if (value == null) return [];
  if (typeof value === "string") return [value];
  return Object.values(value).filter((v) => typeof v === "string");
}

function errorRaw(error) {
  const out = [];
  for (const v of [error?.statusCode, error?.data?.error?.code, error?.data?.error?.type]) {
    if (v != null && typeof v !== "object") out.push(String(v));
  }
  return out;
}

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
}));
const kase = input.case;
const ran = [];
const tools = {};
for (const name of kase.request.tools) {
  tools[name] = tool({
    description: name,
    inputSchema: jsonSchema({ type: "object", properties: {}, additionalProperties: true }),
    execute: async (args) => {
      ran.push([name, args]);
      return `${name} done`;
    },
  });
}
const options = {
  model: model(kase, input.base_url),
  prompt: "go",
  tools,
  maxRetries: 0,
  stopWhen: stepCountIs(4),
};
if (kase.request.max_tokens) options.maxOutputTokens = kase.request.max_tokens;
if (kase.request.tool_choice) options.toolChoice = kase.request.tool_choice;

const out = { stop: null, raw: [], text: "", tool_calls: [], ran, error: null };
function fromStep(step) {
  out.stop = FINISH[step.finishReason] ?? null;
  out.raw = rawOf(step.rawFinishReason);
  out.text = step.text ?? "";
  out.tool_calls = (step.toolCalls ?? []).map((c) => c.toolName);
}
try {
  if (kase.request.stream) {
    let streamError = null;
    let shown = "";
    const result = streamText({ ...options, onError: ({ error }) => (streamError = error) });
    for await (const part of result.fullStream) {
      if (part.type === "text-delta") shown += part.text ?? "";
      if (part.type === "error") streamError = part.error;
    }
    const steps = await result.steps.catch(() => []);
    if (steps.length) fromStep(steps[0]);
    else out.text = shown;
    if (streamError && !steps.length) {
      out.stop = "interrupted";
      out.raw = errorRaw(streamError);
      out.error = `${streamError?.name}: ${String(streamError?.message).slice(0, 200)}`;
    }
  } else {
    const result = await generateText(options);
    fromStep(result.steps[0]);
  }
} catch (error) {
  out.stop = "interrupted";
  out.raw = errorRaw(error);
  out.error = `${error?.name}: ${String(error?.message).slice(0, 200)}`;
}
process.stdout.write(JSON.stringify(out));
