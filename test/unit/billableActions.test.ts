import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { billableActions } from '../../bench/lib/billableActions';
import { HISTORY_FIXTURES } from '../support/histories';

const kept = (file: string) => JSON.parse(readFileSync(join(HISTORY_FIXTURES, file), 'utf8'));

describe('billable actions of a history (D14)', () => {
  it('D14 a page of the release code: its start, the status upserts, the engine step, the markers of each workflow task as one; the version upsert exempt', () => {
    // Its first task recorded the release marker, the version upsert and the local claim; its
    // last the local commit.
    expect(billableActions(kept('release-2026-12-image-complete.json'))).toMatchObject({
      startWorkflow: 1,
      scheduleActivity: 3,
      localActivityMarkers: 2,
      upsertSearchAttributes: 2,
      startTimer: 0,
      total: 8,
    });
  });

  it('D14 a pause counts its timer, and the same page since D14 no status upsert', () => {
    expect(billableActions(kept('release-2026-12-image-pause-then-complete.json'))).toMatchObject({
      startTimer: 1,
      upsertSearchAttributes: 4,
      total: 15,
    });
    expect(
      billableActions(kept('status-in-database-image-pause-then-complete.json')),
    ).toMatchObject({
      startTimer: 1,
      upsertSearchAttributes: 0,
      total: 7,
    });
  });

  it('D14 each retry of an activity is an action, as are a signal, a child workflow (two) and the further attempts of local activities', () => {
    const counts = billableActions({
      events: [
        { eventId: 1, workflowExecutionStartedEventAttributes: {} },
        { eventId: 2, activityTaskScheduledEventAttributes: {} },
        { eventId: 3, activityTaskStartedEventAttributes: { attempt: 3 } },
        { eventId: 4, workflowExecutionSignaledEventAttributes: {} },
        {
          eventId: 5,
          workflowTaskCompletedEventAttributes: {
            meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 },
          },
        },
        { eventId: 6, markerRecordedEventAttributes: { workflowTaskCompletedEventId: 5 } },
        { eventId: 7, markerRecordedEventAttributes: { workflowTaskCompletedEventId: 5 } },
        { eventId: 8, startChildWorkflowExecutionInitiatedEventAttributes: {} },
        {
          eventId: 9,
          upsertWorkflowSearchAttributesEventAttributes: {
            searchAttributes: { indexedFields: { TemporalChangeVersion: {} } },
          },
        },
      ],
    });
    expect(counts).toMatchObject({
      startWorkflow: 1,
      scheduleActivity: 1,
      retryActivity: 2,
      signalWorkflow: 1,
      retryLocalActivity: 2,
      localActivityMarkers: 1,
      startChildWorkflow: 2,
      upsertSearchAttributes: 0,
      total: 10,
    });
  });
});
