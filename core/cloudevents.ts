/**
 * E1/W2: the CloudEvents 1.0 structured JSON form of an outbox row. This is the exact body of
 * every webhook delivery; `id` is the outbox id, which consumers deduplicate by.
 */

/** The event types of SPEC E1. */
export const QUIRE_EVENT_TYPES = [
  'dev.quire.transcription.completed',
  'dev.quire.transcription.failed',
  'dev.quire.transcription.canceled',
  'dev.quire.transcription.task.started',
  'dev.quire.transcription.task.completed',
  'dev.quire.annotations.published',
  'dev.quire.page.verified',
  'dev.quire.provider.paused',
  'dev.quire.provider.resumed',
] as const;

export type QuireEventType = (typeof QUIRE_EVENT_TYPES)[number];

/** The same types by name, for the writers of the outbox. */
export const EVENT_TYPES = {
  completed: 'dev.quire.transcription.completed',
  failed: 'dev.quire.transcription.failed',
  canceled: 'dev.quire.transcription.canceled',
  taskStarted: 'dev.quire.transcription.task.started',
  taskCompleted: 'dev.quire.transcription.task.completed',
  published: 'dev.quire.annotations.published',
  /** V5: the revision that makes every line of a page verified. */
  pageVerified: 'dev.quire.page.verified',
  providerPaused: 'dev.quire.provider.paused',
  providerResumed: 'dev.quire.provider.resumed',
} as const satisfies Record<string, QuireEventType>;

export function isQuireEventType(value: string): value is QuireEventType {
  return (QUIRE_EVENT_TYPES as readonly string[]).includes(value);
}

/** The fields of an outbox row a CloudEvent is built from. */
export interface OutboxEventLike {
  id: number;
  workspaceId: number | null;
  type: string;
  subject: string | null;
  data: unknown;
  createdAt: Date;
}

export interface CloudEvent<T = unknown> {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject?: string;
  time: string;
  datacontenttype: 'application/json';
  data: T;
}

export function eventSource(workspaceId: number | null): string {
  return workspaceId === null ? '/quire' : `/quire/workspaces/${workspaceId}`;
}

export function toCloudEvent(event: OutboxEventLike): CloudEvent {
  const cloudEvent: CloudEvent = {
    specversion: '1.0',
    id: String(event.id),
    source: eventSource(event.workspaceId),
    type: event.type,
    time: event.createdAt.toISOString(),
    datacontenttype: 'application/json',
    data: event.data,
  };
  if (event.subject !== null && event.subject !== '') cloudEvent.subject = event.subject;
  return cloudEvent;
}

/** The exact bytes that are signed and sent: serialised once per delivery attempt. */
export function cloudEventBody(event: OutboxEventLike): string {
  return JSON.stringify(toCloudEvent(event));
}

/** A structural check of a received body, for the W3 helper. */
export function isCloudEvent(value: unknown): value is CloudEvent {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v.specversion === '1.0' &&
    typeof v.id === 'string' &&
    v.id !== '' &&
    typeof v.source === 'string' &&
    typeof v.type === 'string' &&
    typeof v.time === 'string'
  );
}
