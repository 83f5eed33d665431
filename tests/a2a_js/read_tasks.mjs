// Sends each question to zett's A2A 1.0 server with @a2a-js/sdk's own client
// (ClientFactory from the agent card, the JSONRPC transport), streamed and not
// (tests/test_a2a_js_client.py).
//
// usage: node read_tasks.mjs <base url>  < questions.json   (["...", ...])
// prints: [{"question", "streaming", "state", "stop", "text", "events", "error"}]
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.argv[2];
const questions = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
}));

const client = await new ClientFactory().createFromUrl(url);
const out = [];
let n = 0;
for (const streaming of [false, true]) {
  for (const question of questions) {
    n += 1;
    const request = {
      message: {
        messageId: `m${n}`,
        role: Role.ROLE_USER,
        parts: [{ content: { $case: "text", value: question } }],
      },
    };
    const row = { question, streaming, state: null, stop: null, text: "", events: [], error: null };
    try {
      let status;
      if (streaming) {
        for await (const event of client.sendMessageStream(request)) {
          const kind = event.payload?.$case ?? Object.keys(event)[0];
          row.events.push(kind);
          const value = event.payload?.value;
          if (kind === "task") status = value.status;
          if (kind === "statusUpdate") status = value.status;
        }
      } else {
        const result = await client.sendMessage(request);
        const task = result.payload?.$case === "task" ? result.payload.value : result;
        status = task.status;
      }
      row.state = TaskState[status.state];
      row.stop = status.message?.metadata?.zett?.stop ?? null;
      row.text = (status.message?.parts ?? [])
        .filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
    } catch (e) {
      row.error = String(e?.message ?? e);
    }
    out.push(row);
  }
}
process.stdout.write(JSON.stringify(out));
