// A stock useChat page, as the AI SDK's documentation builds one: the default
// transport (POST /api/chat), tool approvals with addToolApprovalResponse and
// sendAutomaticallyWhen, the stored messages as the initial ones. Nothing in it
// knows about zett except the data-stop part it renders and the session URL.
// With ?resume=1 it is the SDK's resume guide's page: useChat({ resume: true }),
// and Stop also asks the server to stop (aborting the request only drops it).
import { useEffect, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import { lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';

export function Chat({ id, initialMessages, resume = false }) {
  const { messages, sendMessage, addToolApprovalResponse, stop, status, error } = useChat({
    id,
    messages: initialMessages,
    resume,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  useEffect(() => {
    window.chatMessages = messages; // for the test to compare whole messages
  }, [messages]);
  const onStop = resume
    ? () => {
        fetch(`/api/chat/${encodeURIComponent(id)}/stop`, { method: 'POST' });
        stop();
      }
    : stop;
  const [input, setInput] = useState('');
  const busy = status === 'submitted' || status === 'streaming';

  return (
    <main>
      {messages.map(message => (
        <div key={message.id} className={`message ${message.role}`}>
          {message.parts.map((part, index) => (
            <Part key={index} part={part} respond={addToolApprovalResponse} />
          ))}
          {message.metadata?.finishReason && (
            <div className="finish">finish: {message.metadata.finishReason}</div>
          )}
        </div>
      ))}
      {error && <div className="error">Error: {error.message}</div>}
      <form
        onSubmit={event => {
          event.preventDefault();
          if (!input.trim()) return;
          sendMessage({ text: input });
          setInput('');
        }}
      >
        <input value={input} onChange={event => setInput(event.target.value)} placeholder="Ask something" />
        <button type="submit" disabled={busy}>Send</button>
        {busy && <button type="button" className="stop-button" onClick={onStop}>Stop</button>}
      </form>
      <div className="status">{status}</div>
    </main>
  );
}

function Part({ part, respond }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'data-stop') return <p className="stop">Stopped: {part.data.describe}</p>;
  if (!part.type.startsWith('tool-')) return null;
  return (
    <div className={`tool ${part.state}`}>
      <code>{part.type.slice('tool-'.length)}({JSON.stringify(part.input)})</code>
      {part.state === 'approval-requested' && (
        <>
          <button className="approve" onClick={() => respond({ id: part.approval.id, approved: true })}>
            Approve
          </button>
          <button
            className="deny"
            onClick={() => respond({ id: part.approval.id, approved: false, reason: 'not now' })}
          >
            Deny
          </button>
        </>
      )}
      {part.state === 'output-available' && <pre className="output">{String(part.output)}</pre>}
      {part.state === 'output-error' && <pre className="output">Error: {part.errorText}</pre>}
      {part.state === 'output-denied' && <pre className="output">Denied: {part.approval.reason}</pre>}
    </div>
  );
}
