// zett's page: a chat over zett serve's UI message stream (the Vercel AI SDK's
// protocol v1), written without a build step or a CDN so it works offline.
// Every stop is shown as a notice styled by its reason, with describe()'s text,
// the withheld tool calls, and a Resume button where the answer can be resumed.
'use strict';

const RESUMABLE = new Set(['interrupted', 'max_output']);
const TITLES = {
  refusal: 'Refused',
  max_output: 'Cut off at the output limit',
  context_full: 'The context window is full',
  interrupted: 'Interrupted',
  paused: 'Paused',
  other: 'Stopped',
};

const state = { chatId: null, messages: [], controller: null, busy: false, files: [], attach: null };
const $ = id => document.getElementById(id);

// ---------------------------------------------------------------- the token
// Off loopback the API needs a bearer token; `zett serve` prints the page's URL
// with it in the fragment (#token=...), which never reaches the server.
function takeToken() {
  const match = location.hash.match(/token=([^&]+)/);
  if (match) {
    sessionStorage.setItem('zett-token', decodeURIComponent(match[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return Boolean(match);
}
takeToken();
// a URL with the token pasted over an open page changes only the fragment
window.addEventListener('hashchange', () => { if (takeToken()) { loadInfo(); loadSessions(); } });

function headers(extra) {
  const token = sessionStorage.getItem('zett-token');
  return Object.assign(token ? { authorization: `Bearer ${token}` } : {}, extra || {});
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({}, options, {
    headers: headers(options && options.headers),
  }));
  if (!response.ok && response.status !== 204) {
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).error.message; } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function newId() {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
}

// ---------------------------------------------------------------- the stream

async function readStream(response, onChunk) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        onChunk(JSON.parse(data));
      }
    }
  }
}

function applyChunk(message, chunk, open) {
  const parts = message.parts;
  const tool = id => parts.find(p => p.toolCallId === id);
  if (chunk.messageMetadata) message.metadata = Object.assign({}, message.metadata, chunk.messageMetadata);
  switch (chunk.type) {
    case 'start': if (chunk.messageId) message.id = chunk.messageId; break;
    case 'start-step': parts.push({ type: 'step-start' }); break;
    case 'text-start': open[chunk.id] = { type: 'text', text: '' }; parts.push(open[chunk.id]); break;
    case 'reasoning-start': open[chunk.id] = { type: 'reasoning', text: '' }; parts.push(open[chunk.id]); break;
    case 'text-delta': case 'reasoning-delta': if (open[chunk.id]) open[chunk.id].text += chunk.delta; break;
    case 'text-end': case 'reasoning-end': delete open[chunk.id]; break;
    case 'tool-input-start':
      parts.push({ type: `tool-${chunk.toolName}`, toolName: chunk.toolName, toolCallId: chunk.toolCallId,
        state: 'input-streaming', rawInput: '' });
      break;
    case 'tool-input-delta': { const p = tool(chunk.toolCallId); if (p) p.rawInput += chunk.inputTextDelta; break; }
    case 'tool-input-available': { const p = tool(chunk.toolCallId); if (p) Object.assign(p, { state: 'input-available', input: chunk.input }); break; }
    case 'tool-input-error': { const p = tool(chunk.toolCallId); if (p) Object.assign(p, { state: 'output-error', input: chunk.input, errorText: chunk.errorText }); break; }
    case 'tool-output-available': { const p = tool(chunk.toolCallId); if (p) Object.assign(p, { state: 'output-available', output: chunk.output }); break; }
    case 'tool-output-error': { const p = tool(chunk.toolCallId); if (p) Object.assign(p, { state: 'output-error', errorText: chunk.errorText }); break; }
    case 'tool-approval-request': { const p = tool(chunk.toolCallId); if (p) Object.assign(p, { state: 'approval-requested', approval: { id: chunk.approvalId } }); break; }
    case 'tool-approval-response': {
      const p = parts.find(q => q.approval && q.approval.id === chunk.approvalId);
      if (p) Object.assign(p, { state: 'approval-responded', approval: { id: chunk.approvalId, approved: chunk.approved, reason: chunk.reason } });
      break;
    }
    case 'tool-output-denied': { const p = tool(chunk.toolCallId); if (p) p.state = 'output-denied'; break; }
    case 'error': parts.push({ type: 'error', text: chunk.errorText }); break;
    case 'finish': message.finishReason = chunk.finishReason; break;
    case 'abort': parts.push({ type: 'error', text: 'Stopped.' }); break;
    default:
      if (chunk.type.startsWith('data-') && !chunk.transient) parts.push({ type: chunk.type, data: chunk.data });
  }
}

async function streamInto(response) {
  let message = null;
  const open = {};
  await readStream(response, chunk => {
    if (chunk.type === 'start') {
      const last = state.messages[state.messages.length - 1];
      // a resumed or approved answer continues the message it goes on in (same id)
      if (last && last.role === 'assistant' && last.id === chunk.messageId) message = last;
      else { message = { id: chunk.messageId, role: 'assistant', parts: [] }; state.messages.push(message); }
    } else if (!message && chunk.type === 'error') {
      // a run that failed before any output sends no start: show the error alone
      message = { id: newId(), role: 'assistant', parts: [] };
      state.messages.push(message);
    }
    if (message) applyChunk(message, chunk, open);
    scheduleRender();
  });
}

async function run(path, body) {
  setBusy(true);
  state.controller = new AbortController();
  try {
    const response = await api(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: state.controller.signal,
    });
    await streamInto(response);
  } catch (error) {
    if (error.name === 'AbortError') {
      // the server stores what streamed so far as interrupted (cancelled)
      // the server stores what streamed so far as interrupted (cancelled): show it
      state.busy = false;
      for (let tries = 0; tries < 30; tries++) {
        const session = await fetchSession(state.chatId);
        if (session && !session.running) { state.messages = session.messages; break; }
        await new Promise(done => setTimeout(done, 100));
      }
      setStatus('Stopped. The answer so far is kept and can be resumed.');
    } else {
      state.messages.push({ id: newId(), role: 'assistant', parts: [{ type: 'error', text: error.message }] });
    }
  } finally {
    state.controller = null;
    const status = $('status').textContent;
    setBusy(false);
    if (status.startsWith('Stopped')) setStatus(status);
    render();
    loadSessions();
  }
}

function send(text, files) {
  if (!state.chatId) { state.chatId = newId(); showChatInUrl(state.chatId); }
  const parts = text ? [{ type: 'text', text }] : [];
  const user = { id: newId(), role: 'user', parts: parts.concat(files) };
  state.messages.push(user);
  render();
  // the body useChat sends (file parts as data URLs, as the AI SDK makes them); the
  // server takes the last user message only, so only this one is sent
  return run('/api/chat', { id: state.chatId, messages: [user], trigger: 'submit-message' });
}

// ---------------------------------------------------------------- attachments

function readAsDataURL(file) {
  return new Promise((done, fail) => {
    const reader = new FileReader();
    reader.onload = () => done(reader.result);
    reader.onerror = () => fail(reader.error);
    reader.readAsDataURL(file);
  });
}

async function fileParts(files) {
  const parts = [];
  for (const file of files) {
    parts.push({ type: 'file', mediaType: file.type || 'application/octet-stream',
      filename: file.name, url: await readAsDataURL(file) });
  }
  return parts;
}

function addFiles(list) {
  const limit = state.attach ? state.attach.max_bytes : Infinity;
  for (const file of list) state.files.push(file);
  const total = state.files.reduce((sum, file) => sum + file.size, 0);
  if (total > limit) {
    state.files = state.files.slice(0, -list.length);
    setStatus(`Attachments may hold ${limit} bytes in all; that would be ${total}.`);
  }
  renderFiles();
}

function renderFiles() {
  const box = $('attachments');
  box.replaceChildren();
  state.files.forEach((file, index) => {
    const chip = el('span', 'chip', `${file.name} · ${file.type || 'unknown type'} · ${file.size} bytes`);
    const remove = el('button', 'delete', '✕');
    remove.type = 'button';
    remove.title = 'Remove this file';
    remove.addEventListener('click', () => { state.files.splice(index, 1); renderFiles(); });
    chip.append(remove);
    box.append(chip);
  });
}

// a stored part is served by /api/sessions/{id}/parts/{sha256}, which needs the
// token: fetched once, shown from a blob: URL
const shownParts = new Map();
function partSource(url, image) {
  if (!url.startsWith('/api/')) { image.src = url; return; }
  if (shownParts.has(url)) { image.src = shownParts.get(url); return; }
  api(url).then(response => response.blob()).then(blob => {
    shownParts.set(url, URL.createObjectURL(blob));
    image.src = shownParts.get(url);
  }).catch(error => { image.alt = `(${error.message})`; });
}

function renderFilePart(part) {
  if (part.mediaType.startsWith('image/')) {
    const image = el('img', 'attachment');
    image.alt = part.filename || part.mediaType;
    partSource(part.url, image);
    return image;
  }
  const kind = part.mediaType.startsWith('audio/') ? 'Audio' : 'Document';
  return el('div', 'attachment file', `${kind}: ${part.filename || 'file'} · ${part.mediaType}`);
}

function resume() {
  return run(`/api/sessions/${encodeURIComponent(state.chatId)}/resume`);
}

// ---------------------------------------------------------------- rendering

let pending = false;
function scheduleRender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function show(value) {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 1);
}

function renderStop(data, canResume) {
  const box = el('div', `stop stop-${data.reason}`);
  box.dataset.reason = data.reason;
  box.append(el('div', 'title', `⚠ ${TITLES[data.reason] || 'Stopped'}`));
  box.append(el('div', 'describe', data.describe));
  const withheld = (data.detail || {}).withheld_tool_calls;
  if (withheld && withheld.length) {
    box.append(el('div', 'withheld', `Withheld tool calls (not run): ${withheld.join(', ')}`));
  }
  if (canResume) {
    const button = el('button', 'resume', 'Resume');
    button.type = 'button';
    button.disabled = state.busy;
    button.addEventListener('click', resume);
    box.append(button);
  }
  return box;
}

function renderTool(part) {
  const box = el('div', `tool${part.state === 'output-error' ? ' error' : ''}`);
  const name = part.toolName || part.type.slice(5);
  const args = part.input !== undefined ? show(part.input) : part.rawInput || '';
  box.append(el('span', 'name', `Tool call · ${name}`));
  box.append(el('pre', 'args', args));
  if (part.state === 'output-available') box.append(el('pre', 'result', `↳ ${show(part.output)}`));
  else if (part.state === 'output-error') box.append(el('pre', 'result', `✖ ${part.errorText}`));
  else if (part.state === 'output-denied') {
    const reason = part.approval && part.approval.reason;
    box.append(el('pre', 'result denied', `✖ Denied${reason ? `: ${reason}` : ''} (not run)`));
  } else if (part.state === 'approval-requested' || part.state === 'approval-responded') box.append(renderApproval(part));
  else box.append(el('pre', 'result dim', '…'));
  return box;
}

// A call that waits for a person: Approve / Deny. As the AI SDK does it
// (addToolApprovalResponse): each part becomes approval-responded, and once every
// waiting call of the answer has one, the message goes back to POST /api/chat.
function renderApproval(part) {
  const row = el('div', 'approval');
  if (part.state === 'approval-responded') {
    row.append(el('span', 'dim', part.approval.approved ? 'Approved' : 'Denied'));
    return row;
  }
  for (const [label, approved] of [['Approve', true], ['Deny', false]]) {
    const button = el('button', approved ? 'approve' : 'deny', label);
    button.type = 'button';
    button.disabled = state.busy;
    button.addEventListener('click', () => decide(part, approved));
    row.append(button);
  }
  return row;
}

function decide(part, approved) {
  part.state = 'approval-responded';
  part.approval = Object.assign({}, part.approval, approved ? { approved } : { approved, reason: 'denied on the page' });
  render();
  const message = state.messages[state.messages.length - 1];
  if (message.parts.some(p => p.state === 'approval-requested')) return;
  run('/api/chat', { id: state.chatId, messages: [message], trigger: 'submit-message', messageId: message.id });
}

// An MCP server asks the person during a tool call (data-elicitation): a form of
// its fields, started from their defaults, or a link (URL mode). The answer goes
// to POST /api/elicitations/{id}; the tool call goes on when it arrives.
// A URL the page makes a link: https:, or http: to this machine (the MCP client
// declines any other before it reaches the page; this holds for a page too).
function safeUrl(text) {
  let url;
  try { url = new URL(text); } catch { return false; }
  if (url.protocol === 'https:') return url.hostname !== '';
  const local = url.hostname === 'localhost' || url.hostname.endsWith('.localhost')
    || /^127\./.test(url.hostname) || url.hostname === '[::1]';
  return url.protocol === 'http:' && local;
}

function renderElicitation(part) {
  const data = part.data;
  const box = el('form', 'elicitation');
  box.append(el('div', 'name', `${data.server} asks`));
  box.append(el('div', 'text', data.message));
  if (part.answered) {
    box.append(el('span', 'dim', part.answered === 'accept' ? 'Answered' : 'Declined'));
    return box;
  }
  const inputs = {};
  if (data.mode === 'url') {
    if (safeUrl(data.url)) {
      const link = el('a', 'url', data.url);
      link.href = data.url; link.target = '_blank'; link.rel = 'noopener noreferrer';
      box.append(link);
    } else {
      box.append(el('span', 'url', data.url));  // shown, never a link
    }
  }
  for (const field of data.fields || []) {
    const label = el('label', 'field');
    label.append(el('span', 'label', field.title + (field.required ? ' *' : '')));
    let input;
    if (field.choices.length && !field.multiple) {
      input = el('select');
      for (const choice of field.choices) {
        const option = el('option', '', choice); option.value = choice;
        if (choice === field.default) option.selected = true;
        input.append(option);
      }
    } else {
      input = el('input');
      input.type = field.type === 'boolean' ? 'checkbox' : (field.type === 'number' || field.type === 'integer') ? 'number' : 'text';
      if (field.type === 'boolean') input.checked = field.default === true;
      else if (field.default !== null && field.default !== undefined) input.value = String(field.default);
      if (field.type === 'integer') input.step = '1';
    }
    input.name = field.name;
    if (field.required && field.type !== 'boolean') input.required = true;
    if (field.description) input.title = field.description;
    inputs[field.name] = [field, input];
    label.append(input);
    box.append(label);
  }
  const row = el('div', 'approval');
  const accept = el('button', 'approve', data.mode === 'url' ? 'Done' : 'Accept');
  accept.type = 'submit';
  const decline = el('button', 'deny', 'Decline');
  decline.type = 'button';
  row.append(accept, decline);
  box.append(row);
  box.addEventListener('submit', event => {
    event.preventDefault();
    const content = {};
    for (const [name, [field, input]] of Object.entries(inputs)) {
      if (field.type === 'boolean') content[name] = input.checked;
      else if (input.value === '') continue;
      else if (field.type === 'integer') content[name] = parseInt(input.value, 10);
      else if (field.type === 'number') content[name] = Number(input.value);
      else if (field.multiple) content[name] = input.value.split(',').map(v => v.trim()).filter(Boolean);
      else content[name] = input.value;
    }
    answerElicitation(part, 'accept', content);
  });
  decline.addEventListener('click', () => answerElicitation(part, 'decline'));
  return box;
}

async function answerElicitation(part, action, content) {
  part.answered = action;
  render();
  try {
    await api(`/api/elicitations/${encodeURIComponent(part.data.id)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(content ? { action, content } : { action }),
    });
  } catch (error) {
    setStatus(`The answer was not taken: ${error.message || error}`);
  }
}

function render() {
  const root = $('messages');
  root.replaceChildren();
  state.messages.forEach((message, index) => {
    const box = el('div', `message ${message.role}`);
    box.dataset.id = message.id;
    if (message.role === 'user') {
      const text = message.parts.filter(p => p.type === 'text').map(p => p.text).join('\n');
      const bubble = el('div', 'bubble', text);
      for (const part of message.parts) if (part.type === 'file') bubble.append(renderFilePart(part));
      box.append(bubble);
    } else {
      const lastMessage = index === state.messages.length - 1;
      message.parts.forEach((part, at) => {
        if (part.type === 'text' && part.text) box.append(el('div', 'text', part.text));
        else if (part.type === 'reasoning' && part.text) box.append(el('div', 'reasoning', part.text));
        else if (part.type.startsWith('tool-')) box.append(renderTool(part));
        else if (part.type === 'data-stop') {
          const last = lastMessage && at === message.parts.length - 1;
          box.append(renderStop(part.data, last && RESUMABLE.has(part.data.reason)));
        } else if (part.type === 'data-elicitation') box.append(renderElicitation(part));
        else if (part.type === 'error') box.append(el('div', 'error-notice', part.text));
      });
    }
    root.append(box);
  });
  root.scrollTop = root.scrollHeight;
}

function setBusy(busy) {
  state.busy = busy;
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  setStatus(busy ? 'Streaming…' : '');
}

function setStatus(text) { $('status').textContent = text; }

// ---------------------------------------------------------------- sessions

async function loadSessions() {
  try {
    const { sessions } = await (await api('/api/sessions')).json();
    const list = $('sessions');
    list.replaceChildren();
    for (const session of sessions) {
      const item = el('li', session.id === state.chatId ? 'current' : '');
      const when = new Date(session.updated_at * 1000).toLocaleString();
      item.append(el('span', '', session.title || session.id));
      item.title = `${session.id} · ${when} · ${session.rows} messages`;
      const remove = el('button', 'delete', '✕');
      remove.type = 'button';
      remove.title = 'Delete this session';
      remove.addEventListener('click', async event => {
        event.stopPropagation();
        try {
          await api(`/api/sessions/${encodeURIComponent(session.id)}`, { method: 'DELETE' });
          if (session.id === state.chatId) newChat();
        } catch (error) { setStatus(error.message); }
        loadSessions();
      });
      item.append(remove);
      item.addEventListener('click', () => openSession(session.id));
      list.append(item);
    }
  } catch (error) {
    setStatus(`Sessions: ${error.message}`);
  }
}

async function fetchSession(id) {
  try { return await (await api(`/api/sessions/${encodeURIComponent(id)}`)).json(); } catch (e) { return null; }
}

async function openSession(id) {
  if (state.busy) return;
  try {
    const session = await (await api(`/api/sessions/${encodeURIComponent(id)}`)).json();
    state.chatId = id;
    state.messages = session.messages;
    showChatInUrl(id);
    render();
    loadSessions();
  } catch (error) { setStatus(error.message); }
}

// The open chat's id is in the page's URL (?chat=ID), so a reload (or the URL in
// another tab) reopens that chat with its waiting approvals; a new chat has none.
function showChatInUrl(id) {
  const query = id ? `?chat=${encodeURIComponent(id)}` : '';
  history.replaceState(null, '', location.pathname + query);
}

async function reopenChatOfUrl() {
  const id = new URLSearchParams(location.search).get('chat');
  if (!id) return;
  const session = await fetchSession(id);
  if (session) { await openSession(id); return; }
  showChatInUrl(null);  // deleted meanwhile, or never stored: a new chat
  setStatus(`Chat ${id} is not stored (any more): this is a new chat.`);
}

function newChat() {
  showChatInUrl(null);
  state.chatId = null;
  state.messages = [];
  render();
  loadSessions();
}

// ---------------------------------------------------------------- wiring

document.addEventListener('DOMContentLoaded', async () => {
  $('composer').addEventListener('submit', async event => {
    event.preventDefault();
    const text = $('prompt').value.trim();
    if ((!text && !state.files.length) || state.busy) return;
    let files;
    try { files = await fileParts(state.files); } catch (error) { setStatus(error.message); return; }
    $('prompt').value = '';
    state.files = [];
    renderFiles();
    send(text, files);
  });
  $('attach').addEventListener('change', event => {
    addFiles(Array.from(event.target.files));
    event.target.value = '';
  });
  $('prompt').addEventListener('keydown', event => {
    if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('composer').requestSubmit(); }
  });
  $('stop').addEventListener('click', () => state.controller && state.controller.abort());
  $('new-chat').addEventListener('click', newChat);
  loadInfo();
  loadSessions();
  reopenChatOfUrl();
});

async function loadInfo() {
  try {
    const info = await (await api('/api/info')).json();
    $('model').textContent = `${info.model} · tools: ${info.tools.join(', ') || 'none'}` +
      (info.max_tokens ? ` · max ${info.max_tokens} tokens` : '');
    state.attach = info.attachments || null;
    const types = state.attach ? state.attach.media_types : [];
    $('attach').accept = types.join(',');
    $('attach-button').classList.toggle('unavailable', types.length === 0);
    // a model that cannot take files says why (the server would refuse them too)
    $('attach-button').title = types.length ? `Attach: ${types.join(', ')}` : (state.attach.note || 'this model takes no files');
  } catch (error) {
    $('model').textContent = `${error.message} (open the URL zett serve printed, with #token=…)`;
  }
}
