'use client';
import { type CreateWebhookState, createWebhookAction } from '@quire/web/app/webhooks/actions';
import { useActionState, useEffect, useRef, useState } from 'react';

const EVENT_TYPES = [
  'dev.quire.transcription.completed',
  'dev.quire.transcription.failed',
  'dev.quire.transcription.canceled',
  'dev.quire.annotations.published',
  'dev.quire.provider.paused',
  'dev.quire.provider.resumed',
];

/** 32 random bytes from the browser's CSPRNG, hex: the secret never needs to leave this tab unsealed but once. */
function generateSecret(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return `whsec_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * W1 create: the secret is typed or generated here, sent once to be sealed, and shown once
 * after creation so it can be copied into the receiver; the server never returns it.
 */
export function WebhookForm() {
  const [state, action, pending] = useActionState<CreateWebhookState, FormData>(
    createWebhookAction,
    {
      error: null,
      created: null,
    },
  );
  const [secret, setSecret] = useState('');
  const [shown, setShown] = useState<{ id: string; url: string; secret: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const submitted = useRef('');
  const form = useRef<HTMLFormElement>(null);

  useEffect(() => {
    if (state.created) {
      setShown({ ...state.created, secret: submitted.current });
      setSecret('');
      setCopied(false);
      form.current?.reset();
    }
  }, [state.created]);

  return (
    <div className="stack">
      {shown ? (
        <section
          className="notice notice-ok secret-once"
          aria-labelledby="secret-once-heading"
          data-testid="secret-once"
        >
          <h3 id="secret-once-heading">Webhook created: copy its secret now</h3>
          <p>
            Deliveries to <span className="mono">{shown.url}</span> are signed with this secret. It
            is stored encrypted and will not be shown again.
          </p>
          <p className="secret-value">
            <code>{shown.secret}</code>
          </p>
          <div className="actions">
            <button
              type="button"
              className="secondary"
              onClick={() => {
                void navigator.clipboard?.writeText(shown.secret).then(
                  () => setCopied(true),
                  () => setCopied(false),
                );
              }}
            >
              Copy secret
            </button>
            <button type="button" className="link" onClick={() => setShown(null)}>
              I have stored it
            </button>
            <span role="status" aria-live="polite" className="ok">
              {copied ? 'Copied.' : ''}
            </span>
          </div>
        </section>
      ) : null}
      <form
        ref={form}
        action={action}
        className="card stack"
        aria-labelledby="create-webhook-heading"
        data-act="webhook.create"
        onSubmit={() => {
          submitted.current = secret;
        }}
      >
        <h2 id="create-webhook-heading">Add a webhook</h2>
        <div className="field">
          <label htmlFor="webhook-url">Target URL</label>
          <input
            id="webhook-url"
            name="url"
            type="url"
            required
            placeholder="https://example.org/quire-events"
            aria-describedby="webhook-url-help"
          />
          <span id="webhook-url-help" className="muted small">
            An https URL without credentials, query or fragment. Redirects are not followed.
          </span>
        </div>
        <div className="field">
          <label htmlFor="webhook-secret">Signing secret</label>
          <div className="input-row">
            <input
              id="webhook-secret"
              name="secret"
              type="text"
              required
              minLength={32}
              maxLength={1024}
              autoComplete="off"
              spellCheck={false}
              value={secret}
              onChange={(e) => setSecret(e.target.value)}
              aria-describedby="webhook-secret-help"
              className="mono"
            />
            <button type="button" className="secondary" onClick={() => setSecret(generateSecret())}>
              Generate
            </button>
          </div>
          <span id="webhook-secret-help" className="muted small">
            32 to 1024 characters. Generate one here (made in your browser), or paste your own.
          </span>
        </div>
        <fieldset className="choices">
          <legend>Events (none checked: every event)</legend>
          {EVENT_TYPES.map((type) => (
            <label key={type}>
              <input type="checkbox" name="eventTypes" value={type} />{' '}
              <span className="mono small">{type}</span>
            </label>
          ))}
        </fieldset>
        {state.error ? (
          <p role="alert" className="error">
            {state.error}
          </p>
        ) : null}
        <div className="actions">
          <button type="submit" disabled={pending}>
            {pending ? 'Creating…' : 'Create webhook'}
          </button>
        </div>
      </form>
    </div>
  );
}
