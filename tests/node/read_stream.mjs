// Reads zett serve's UI message stream with the Vercel AI SDK's own code:
// DefaultChatTransport (what useChat sends and how it parses the SSE), every chunk
// checked against the SDK's uiMessageChunkSchema, and readUIMessageStream building
// the UI message. Used by tests/test_serve_aisdk.py.
//
//   node read_stream.mjs BASE_URL CHAT_ID:PROMPT [CHAT_ID:PROMPT ...]
//
// A chat id that starts with "approve" or "deny" answers the calls the first turn
// left waiting for approval as addToolApprovalResponse does (each part
// approval-responded, approved or not; "deny" gives the reason "not now"), and sends
// the list back as the SDK's automatic send does (trigger submit-message, messageId
// the assistant message's id); readUIMessageStream continues the same message. With
// "reload" in the id, the answered message is the one GET /api/sessions/ID restores
// (a page reloaded while the calls wait), not the one the SDK built.
//
// Prints one JSON object: {CHAT_ID: {header, chunks, invalid, errors, message,
// approved?, second}}: `approved` is the continuation ({chunks, message}) and
// `second` the answer to a second turn that sends the built messages back.
import {
  DefaultChatTransport,
  readUIMessageStream,
  uiMessageChunkSchema,
} from 'ai';
import { safeValidateTypes } from '@ai-sdk/provider-utils';

const [base, ...cases] = process.argv.slice(2);
const results = {};

// One request: every chunk validated, the message built (continuing `message`).
async function read(transport, chatId, messages, message, into) {
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: 'submit-message',
    messageId: message ? message.id : undefined,
    abortSignal: undefined,
  });
  const [forSchema, forReader] = stream.tee();
  const checking = (async () => {
    const reader = forSchema.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      into.chunks.push(value);
      const checked = await safeValidateTypes({ value, schema: uiMessageChunkSchema });
      if (!checked.success) into.invalid.push({ chunk: value, error: String(checked.error) });
    }
  })();
  let built = null;
  for await (const update of readUIMessageStream({
    message: message ? structuredClone(message) : undefined,
    stream: forReader,
    onError: error => into.errors.push(String(error)),
  })) {
    built = update;
  }
  await checking;
  return built;
}

// What addToolApprovalResponse does to each waiting part of the message.
function answer(message, approved) {
  const answered = structuredClone(message);
  for (const part of answered.parts) {
    if (part.state !== 'approval-requested') continue;
    part.state = 'approval-responded';
    part.approval = { ...part.approval, approved, ...(approved ? {} : { reason: 'not now' }) };
  }
  return answered;
}

for (const spec of cases) {
  const at = spec.indexOf(':');
  const chatId = spec.slice(0, at);
  const prompt = spec.slice(at + 1);
  let header = null;
  const transport = new DefaultChatTransport({
    api: `${base}/api/chat`,
    // a field a front end adds: the server must ignore it, not refuse it
    body: { clientExtra: { theme: 'dark' } },
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      header = response.headers.get('x-vercel-ai-ui-message-stream');
      return response;
    },
  });
  const user = {
    id: `user-${chatId}`,
    role: 'user',
    parts: [{ type: 'text', text: prompt }],
  };
  const result = { header: null, chunks: [], invalid: [], errors: [], message: null };
  let history = [user];
  try {
    result.message = await read(transport, chatId, [user], undefined, result);
    if (result.message) history = [user, result.message];
  } catch (error) {
    result.errors.push(String(error));
  }
  result.header = header;
  if (result.message && (chatId.startsWith('approve') || chatId.startsWith('deny'))) {
    let waiting = result.message;
    if (chatId.includes('reload')) {
      const stored = await (await fetch(`${base}/api/sessions/${chatId}`)).json();
      waiting = stored.messages[stored.messages.length - 1];
      result.restored = waiting;
    }
    const answered = answer(waiting, chatId.startsWith('approve'));
    const approved = { chunks: [], invalid: [], errors: [], message: null };
    try {
      approved.message = await read(transport, chatId, [user, answered], answered, approved);
      history = [user, approved.message];
    } catch (error) {
      approved.errors.push(String(error));
    }
    result.approved = approved;
  }
  // the second turn as useChat sends it: the whole history, the assistant message
  // as the SDK built it (tool parts, data-stop parts, step-start...) and a new question
  if (result.message) {
    const next = { id: `user2-${chatId}`, role: 'user', parts: [{ type: 'text', text: 'thanks' }] };
    try {
      const stream = await transport.sendMessages({
        chatId,
        messages: [...history, next],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      for await (const message of readUIMessageStream({ stream })) result.second = message;
    } catch (error) {
      result.errors.push(`second turn: ${error}`);
    }
  }
  results[chatId] = result;
}

process.stdout.write(JSON.stringify(results));
