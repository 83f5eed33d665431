// Reads zett serve's UI message stream with the Vercel AI SDK's own code:
// DefaultChatTransport (what useChat sends and how it parses the SSE), every chunk
// checked against the SDK's uiMessageChunkSchema, and readUIMessageStream building
// the UI message. Used by tests/test_serve_aisdk.py.
//
//   node read_stream.mjs BASE_URL CHAT_ID:PROMPT [CHAT_ID:PROMPT ...]
//
// Prints one JSON object: {CHAT_ID: {header, chunks, invalid, errors, message, second}}:
// `second` is the answer to a second turn that sends the built message back.
import {
  DefaultChatTransport,
  readUIMessageStream,
  uiMessageChunkSchema,
} from 'ai';
import { safeValidateTypes } from '@ai-sdk/provider-utils';

const [base, ...cases] = process.argv.slice(2);
const results = {};

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
  try {
    const stream = await transport.sendMessages({
      chatId,
      messages: [user],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const [forSchema, forReader] = stream.tee();
    const checking = (async () => {
      const reader = forSchema.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        result.chunks.push(value);
        const checked = await safeValidateTypes({ value, schema: uiMessageChunkSchema });
        if (!checked.success) result.invalid.push({ chunk: value, error: String(checked.error) });
      }
    })();
    for await (const message of readUIMessageStream({
      stream: forReader,
      onError: error => result.errors.push(String(error)),
    })) {
      result.message = message;
    }
    await checking;
  } catch (error) {
    result.errors.push(String(error));
  }
  result.header = header;
  // the second turn as useChat sends it: the whole history, the assistant message
  // as the SDK built it (tool parts, data-stop parts, step-start...) and a new question
  if (result.message) {
    const next = { id: `user2-${chatId}`, role: 'user', parts: [{ type: 'text', text: 'thanks' }] };
    try {
      const stream = await transport.sendMessages({
        chatId,
        messages: [user, result.message, next],
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
