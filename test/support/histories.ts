/**
 * D5: where recorded histories are kept. Each is named after the workflow code that wrote it,
 * so recording again on new code adds histories beside the old ones instead of replacing
 * them: the old ones are the runs still in flight when a deploy lands, and must keep replaying.
 */
export const HISTORY_FIXTURES = 'test/fixtures/histories';

/** The workflow code of today, by its newest patch (workflows/patches.ts). */
const RECORDED_BY = 'status-in-database';

export function recordedHistoryFile(name: string): string {
  return `${HISTORY_FIXTURES}/${RECORDED_BY}-${name}.json`;
}

/** A history event as fetched (payload data as bytes) or as kept in a fixture (base64 text). */
export interface HistoryEventLike {
  markerRecordedEventAttributes?: {
    markerName?: string | null;
    details?: Record<
      string,
      { payloads?: Array<{ data?: Uint8Array | string | null }> | null }
    > | null;
  } | null;
}

interface HistoryLike {
  events?: HistoryEventLike[] | null;
}

/** The patch ids whose markers a history recorded, in order. */
export function patchIdsOf(history: HistoryLike): string[] {
  return (history.events ?? []).flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.details?.['patch-data']?.payloads?.[0]?.data;
    if (marker?.markerName !== 'core_patch' || !data) return [];
    const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.from(data);
    return [JSON.parse(bytes.toString()).id as string];
  });
}
