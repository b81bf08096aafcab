/**
 * D5: where recorded histories are kept. Each is named after the workflow code that wrote it,
 * so recording again on new code adds histories beside the old ones instead of replacing
 * them: the old ones are the runs still in flight when a deploy lands, and must keep replaying.
 */
export const HISTORY_FIXTURES = 'test/fixtures/histories';

/** The workflow code of today, by its newest release patch (workflows/patches.ts). */
const RECORDED_BY = 'release-2026-12';

export function recordedHistoryFile(name: string): string {
  return `${HISTORY_FIXTURES}/${RECORDED_BY}-${name}.json`;
}
