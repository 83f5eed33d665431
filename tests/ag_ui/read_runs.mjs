// Runs each case with @ag-ui/client's own HttpAgent against zett serve's AG-UI
// route (tests/test_ag_ui_client.py). The client's pipeline enforces the 1.0
// schema on every event (an unknown field is stripped with a console.warn) and
// verifies the event sequence (a violation errors the run): both are counted.
//
// usage: node read_runs.mjs  < cases.json
//   cases.json: [{"url", "threadId", "runId", "question"?, "resume"?}]
// prints: [{"threadId", "events": [types], "violations": [...], "warnings": [...],
//           "finished": {outcome, result, metadata} | null, "runError": {...} | null,
//           "interrupts": [...], "messages": [...], "error": str | null}]
import { HttpAgent } from "@ag-ui/client";

const warnings = [];
const originalWarn = console.warn;
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
}));

const out = [];
for (const c of input) {
  warnings.length = 0;
  const agent = new HttpAgent({ url: c.url, threadId: c.threadId });
  if (c.question !== undefined) {
    agent.messages = [{ id: `m-${c.threadId}-${c.runId}`, role: "user", content: c.question }];
  }
  const events = [];
  let finished = null;
  let runError = null;
  let error = null;
  const violations = [];
  try {
    await agent.runAgent(
      { runId: c.runId, ...(c.resume ? { resume: c.resume } : {}) },
      {
        onEvent: ({ event }) => { events.push(event.type); },
        onRunFinishedEvent: ({ event }) => {
          finished = { outcome: event.outcome ?? null, result: event.result ?? null,
                       metadata: event.metadata ?? null };
        },
        onRunErrorEvent: ({ event }) => { runError = { message: event.message, code: event.code }; },
        onRunFailed: ({ error: e }) => { error = String(e?.message ?? e); },
      },
    );
  } catch (e) {
    error = String(e?.message ?? e);
  }
  if (error !== null && runError === null) violations.push(error);
  out.push({
    threadId: c.threadId,
    events,
    violations,
    warnings: [...warnings],
    finished,
    runError,
    interrupts: agent.pendingInterrupts,
    messages: agent.messages,
    error,
  });
}
console.warn = originalWarn;
process.stdout.write(JSON.stringify(out));
