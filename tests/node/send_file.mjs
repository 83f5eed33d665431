// A file sent to zett serve the way the Vercel AI SDK's useChat sends it: a user
// message with a FileUIPart whose url is a data URL (what the SDK's
// convertFileListToFileUIParts makes of an <input type=file>), through the SDK's
// DefaultChatTransport; the second turn re-sends the whole history, data URL
// included, as the stock transport does; the restored session is checked with the
// SDK's own safeValidateUIMessages and sent back as a page that reloaded would.
// Used by tests/test_serve_aisdk_files.py.
//
//   node send_file.mjs BASE_URL CHAT_ID PNG_BASE64
//
// Prints one JSON object: {first, second, third, restored, restoredValid, errors}.
import { DefaultChatTransport, readUIMessageStream, safeValidateUIMessages } from 'ai';

const [base, chatId, png] = process.argv.slice(2);
const out = { errors: [] };
const transport = new DefaultChatTransport({ api: `${base}/api/chat` });

async function turn(messages) {
  const stream = await transport.sendMessages({
    chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined,
  });
  let last = null;
  for await (const message of readUIMessageStream({ stream, onError: e => out.errors.push(String(e)) })) {
    last = message;
  }
  return last;
}

const file = { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: `data:image/png;base64,${png}` };
const first = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'What is in this picture?' }, file] };
try {
  const checked = await safeValidateUIMessages({ messages: [first] });
  if (!checked.success) out.errors.push(`our file part: ${checked.error}`);
  out.first = await turn([first]);
  const second = { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'And its colour?' }] };
  out.second = await turn([first, out.first, second]);  // the stock transport: everything again

  const restored = await (await fetch(`${base}/api/sessions/${chatId}`)).json();
  out.restored = restored.messages;
  const valid = await safeValidateUIMessages({ messages: restored.messages });
  out.restoredValid = valid.success;
  if (!valid.success) out.errors.push(`restored: ${valid.error}`);
  const third = { id: 'u3', role: 'user', parts: [{ type: 'text', text: 'Thanks' }] };
  out.third = await turn([...restored.messages, third]);  // a page that reloaded the chat
} catch (error) {
  out.errors.push(String(error));
}
process.stdout.write(JSON.stringify(out));
