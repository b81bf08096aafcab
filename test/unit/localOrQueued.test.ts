import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { KEY_MISMATCH, STALE_ATTEMPT } from '../../core/failures';
import { localOrQueued } from '../../workflows/keyFault';

const failing = (type: string) => async (_ref: string) => {
  throw ApplicationFailure.create({ type, message: type, nonRetryable: true });
};

describe('a local claim or commit that meets a fleet key fault (D1)', () => {
  it('D1 goes to the task queue with the same arguments, with no pause', async () => {
    const queued: string[] = [];
    const step = localOrQueued(failing(KEY_MISMATCH), async (ref: string) => {
      queued.push(ref);
      return 'queued';
    });
    await expect(step('attempt-1')).resolves.toBe('queued');
    expect(queued).toEqual(['attempt-1']);
  });

  it('D1 any other failure, and a success, stay the local step’s own', async () => {
    const queued = async () => 'queued';
    await expect(localOrQueued(failing(STALE_ATTEMPT), queued)('a')).rejects.toMatchObject({
      type: STALE_ATTEMPT,
    });
    await expect(localOrQueued(async (ref: string) => `local ${ref}`, queued)('a')).resolves.toBe(
      'local a',
    );
  });
});
