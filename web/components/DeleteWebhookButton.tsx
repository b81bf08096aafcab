'use client';
import { deleteWebhookAction } from '@quire/web/app/webhooks/actions';

export function DeleteWebhookButton({ webhookId, url }: { webhookId: string; url: string }) {
  return (
    <form
      action={deleteWebhookAction}
      className="inline-form"
      data-act="webhook.delete"
      onSubmit={(e) => {
        if (!window.confirm(`Delete the webhook to ${url}? Its delivery log is deleted too.`))
          e.preventDefault();
      }}
    >
      <input type="hidden" name="webhookId" value={webhookId} />
      <button type="submit" className="danger" aria-label={`Delete webhook to ${url}`}>
        Delete
      </button>
    </form>
  );
}
