// The chat id lives in the URL (?chat=ID), so a reload opens the same chat with
// the messages the server stored for it.
import { createRoot } from 'react-dom/client';
import { Chat } from './Chat.jsx';

const url = new URL(location.href);
let id = url.searchParams.get('chat');
if (!id) {
  id = crypto.randomUUID().replaceAll('-', '');
  url.searchParams.set('chat', id);
  history.replaceState(null, '', url);
}

const response = await fetch(`/api/sessions/${id}`);
const initialMessages = response.ok ? (await response.json()).messages : [];
const resume = url.searchParams.get('resume') === '1';
createRoot(document.getElementById('root')).render(
  <Chat id={id} initialMessages={initialMessages} resume={resume} />,
);
