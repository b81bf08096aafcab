/**
 * Identifier builders. Job, batch and attempt ids are UUIDv7: time-ordered, so keyset
 * pagination by id follows creation order, and random enough to be unguessable.
 * Only Web Crypto is used so this module also loads inside the workflow sandbox
 * (where it must not be called: ids are made in activities or the client).
 */

export function uuidv7(now: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  const ms = BigInt(now);
  for (let i = 0; i < 6; i++) {
    bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  }
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** T1: the workflow id is derived from the job id, so one job has exactly one workflow. */
export function workflowIdForJob(jobId: string): string {
  return `transcription-job-${jobId}`;
}

/** IIIF Presentation 3 canvas id for a page. */
export function canvasUriFor(baseUrl: string, workspaceId: number, itemId: string, pageId: number) {
  return `${baseUrl.replace(/\/$/, '')}/iiif/${workspaceId}/${encodeURIComponent(itemId)}/canvas/${pageId}`;
}
