import type { TestQuire } from '../../test/support/quire';
import {
  ACTION_KINDS,
  type ActionCounts,
  type ActionKind,
  billableActions,
} from './billableActions';
import { temporalRequests } from './temporalRequests';

/**
 * D14: the billable Temporal actions of pages run through Quire's own workflow, by a real
 * worker on a real Temporal server whose Prometheus endpoint is `metricsUrl`. Each page's
 * history is fetched and counted (bench/lib/billableActions.ts); what a history does not hold,
 * the activity heartbeats that reached the server and the queries it answered, is the
 * server's own request count over the pages, which run one after another so nothing else
 * lands in it.
 */
export interface PageActions {
  /** Each page's actions from its history, in the order the pages ran. */
  historyByPage: number[];
  /** The median page's history, by kind (the kinds that occurred). */
  history: Partial<Record<ActionKind, number>> & { total: number };
  heartbeatsPerPage: number;
  queriesPerPage: number;
  /** The largest page's history, with the heartbeats and queries a page: what a page costs. */
  maxPerPage: number;
}

/** The simulated engine's options (providers/simulated.ts) of a kind of page. */
export interface PagePath {
  kind: 'image' | 'audio';
  simulated: Record<string, unknown>;
}

const HEARTBEATS = ['RecordActivityTaskHeartbeat', 'RecordActivityTaskHeartbeatById'];
const QUERIES = ['QueryWorkflow'];

export async function pageActions(
  quire: TestQuire,
  workspaceId: number,
  metricsUrl: string,
  path: PagePath,
  pages: number,
): Promise<PageActions> {
  const before = await temporalRequests(metricsUrl);
  const workflowIds: string[] = [];
  for (let i = 0; i < pages; i++) {
    const job = await quire.client.startJob({
      workspaceId,
      pageId: await quire.page(workspaceId, path.kind),
      options: { simulated: path.simulated },
    });
    await quire.temporal.workflow.getHandle(job.workflowId).result();
    workflowIds.push(job.workflowId);
  }
  const after = await temporalRequests(metricsUrl);
  const counted = (operations: string[]) =>
    operations.reduce((sum, op) => sum + (after[op] ?? 0) - (before[op] ?? 0), 0) / pages;
  const counts: ActionCounts[] = [];
  for (const workflowId of workflowIds)
    counts.push(
      billableActions(await quire.temporal.workflow.getHandle(workflowId).fetchHistory()),
    );
  const byTotal = [...counts].sort((a, b) => a.total - b.total);
  const median = byTotal[Math.floor(byTotal.length / 2)]!;
  const heartbeatsPerPage = counted(HEARTBEATS);
  const queriesPerPage = counted(QUERIES);
  return {
    historyByPage: counts.map((c) => c.total),
    history: {
      ...Object.fromEntries(ACTION_KINDS.filter((k) => median[k] > 0).map((k) => [k, median[k]])),
      total: median.total,
    },
    heartbeatsPerPage,
    queriesPerPage,
    maxPerPage: byTotal.at(-1)!.total + heartbeatsPerPage + queriesPerPage,
  };
}
