import type { Logger } from '../../core/logger';
import type { RetrySchedule } from '../../core/webhookSchedule';
import { appendEvent } from '../../db/events';
import { type Pool, withTransaction } from '../../db/pool';

/** Shared fixtures of the webhook and outbox tests. */

export const TEST_SECRET_KEY = 'quire-test-secret-key-0123456789-abcdefghij';

/** Short delays so retries land within a test; the real schedule is unit-tested. */
export const FAST_SCHEDULE: RetrySchedule = {
  delaysMs: [0, 200, 400, 600],
  repeatEveryMs: 600,
  maxAgeMs: 120_000,
};

export async function createWorkspace(pool: Pool, name = 'test'): Promise<number> {
  const { rows } = await pool.query<{ id: number }>(
    'INSERT INTO workspaces (name) VALUES ($1) RETURNING id',
    [name],
  );
  return rows[0]!.id;
}

export async function commitEvent(
  pool: Pool,
  workspaceId: number | null,
  data: Record<string, unknown> = {},
  type = 'dev.quire.transcription.completed',
): Promise<number> {
  return withTransaction(pool, (client) =>
    appendEvent(client, { workspaceId, type, subject: 'transcription-jobs/test', data }),
  );
}

export interface CapturedLog {
  level: string;
  object: Record<string, unknown>;
  message?: string;
}

export function captureLogger(): Logger & { lines: CapturedLog[]; text(): string } {
  const lines: CapturedLog[] = [];
  const at = (level: string) => (object: Record<string, unknown>, message?: string) => {
    lines.push({ level, object, message });
  };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    text: () => lines.map((l) => JSON.stringify(l)).join('\n'),
  };
}

export function uniqueSecret(label = 's'): string {
  return `${label}-${Math.random().toString(36).slice(2)}-secret-value-0123456789abcdef`;
}
