/**
 * D14: the Temporal Cloud actions a workflow's history records, by Temporal's own table
 * ("Temporal Cloud Actions", docs.temporal.io/cloud/actions): what a page would cost in the
 * unit Temporal Cloud bills, and what a self-hosted server's load follows too.
 *
 * Counted from the history: the start; each activity scheduled, and each retry of it (the
 * attempt number its start event carries); each timer, however implicit (a `condition` with a
 * timeout starts one); each search attribute upsert, except one of `TemporalChangeVersion`
 * alone (a patch's, exempt) and those given at the start (part of the start); every marker of
 * one workflow task together as one (local activities, patches), and each further attempt of
 * a local activity the task reports; each signal received, update accepted, child workflow
 * (two: its intent and its start), workflow options update, Nexus operation and reset.
 * Not billed, so not counted: the workflow's own tasks, its completion, a memo upsert.
 * Not in a history, so counted elsewhere: activity heartbeats that reach the server and
 * queries (the server's request counts, bench/lib/temporalRequests.ts).
 */

/** A history event as fetched (`eventType` a number) or kept as JSON (`eventType` a name). */
export interface BillableEventLike {
  eventId?: unknown;
  workflowExecutionStartedEventAttributes?: unknown;
  activityTaskScheduledEventAttributes?: unknown;
  activityTaskStartedEventAttributes?: { attempt?: number | null } | null;
  timerStartedEventAttributes?: unknown;
  upsertWorkflowSearchAttributesEventAttributes?: {
    searchAttributes?: { indexedFields?: Record<string, unknown> | null } | null;
  } | null;
  markerRecordedEventAttributes?: {
    workflowTaskCompletedEventId?: unknown;
  } | null;
  workflowTaskCompletedEventAttributes?: {
    meteringMetadata?: { nonfirstLocalActivityExecutionAttempts?: number | null } | null;
  } | null;
  workflowExecutionSignaledEventAttributes?: unknown;
  workflowExecutionUpdateAcceptedEventAttributes?: unknown;
  startChildWorkflowExecutionInitiatedEventAttributes?: unknown;
  workflowExecutionOptionsUpdatedEventAttributes?: unknown;
  nexusOperationScheduledEventAttributes?: unknown;
  nexusOperationCancelRequestedEventAttributes?: unknown;
  workflowTaskFailedEventAttributes?: { cause?: unknown } | null;
}

/** The kinds of billable action, as Temporal's table names them. */
export const ACTION_KINDS = [
  'startWorkflow',
  'scheduleActivity',
  'retryActivity',
  'localActivityMarkers',
  'retryLocalActivity',
  'startTimer',
  'upsertSearchAttributes',
  'signalWorkflow',
  'acceptUpdate',
  'startChildWorkflow',
  'updateWorkflowOptions',
  'nexusOperation',
  'resetWorkflow',
] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];
export type ActionCounts = Record<ActionKind, number> & { total: number };

/** The exempt search attribute: the SDK's record of the patches a run took. */
const CHANGE_VERSION = 'TemporalChangeVersion';

/** The billable actions of one workflow history, by kind and in total. */
export function billableActions(history: { events?: BillableEventLike[] | null }): ActionCounts {
  const counts = Object.fromEntries(ACTION_KINDS.map((kind) => [kind, 0])) as Record<
    ActionKind,
    number
  >;
  const markerTasks = new Set<string>();
  for (const event of history.events ?? []) {
    if (event.workflowExecutionStartedEventAttributes) counts.startWorkflow += 1;
    if (event.activityTaskScheduledEventAttributes) counts.scheduleActivity += 1;
    const started = event.activityTaskStartedEventAttributes;
    if (started) counts.retryActivity += Math.max(0, Number(started.attempt ?? 1) - 1);
    if (event.timerStartedEventAttributes) counts.startTimer += 1;
    const upsert = event.upsertWorkflowSearchAttributesEventAttributes;
    if (upsert) {
      const keys = Object.keys(upsert.searchAttributes?.indexedFields ?? {});
      if (keys.some((key) => key !== CHANGE_VERSION)) counts.upsertSearchAttributes += 1;
    }
    const marker = event.markerRecordedEventAttributes;
    // Every marker of one workflow task is one action, however many local activities it holds.
    if (marker) markerTasks.add(String(marker.workflowTaskCompletedEventId ?? event.eventId));
    const metering = event.workflowTaskCompletedEventAttributes?.meteringMetadata;
    counts.retryLocalActivity += Number(metering?.nonfirstLocalActivityExecutionAttempts ?? 0);
    if (event.workflowExecutionSignaledEventAttributes) counts.signalWorkflow += 1;
    if (event.workflowExecutionUpdateAcceptedEventAttributes) counts.acceptUpdate += 1;
    if (event.startChildWorkflowExecutionInitiatedEventAttributes) counts.startChildWorkflow += 2;
    if (event.workflowExecutionOptionsUpdatedEventAttributes) counts.updateWorkflowOptions += 1;
    if (event.nexusOperationScheduledEventAttributes) counts.nexusOperation += 1;
    if (event.nexusOperationCancelRequestedEventAttributes) counts.nexusOperation += 1;
    const failedTask = event.workflowTaskFailedEventAttributes;
    if (failedTask && isResetCause(failedTask.cause)) counts.resetWorkflow += 1;
  }
  counts.localActivityMarkers = markerTasks.size;
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  return { ...counts, total };
}

/** `WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW`, by name (kept JSON) or number (fetched). */
function isResetCause(cause: unknown): boolean {
  return cause === 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW' || cause === 20;
}
