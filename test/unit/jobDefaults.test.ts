import { describe, expect, it } from 'vitest';
import { jobSettingsOf, parseConfig } from '../../core/config';
import { DEFAULT_TASK_QUEUE, JOB_DEFAULTS, MAINTENANCE_TASK_QUEUE } from '../../core/temporal';

describe('the workflow-input defaults, defined once (T1, J3)', () => {
  it('T1 J3 the configuration defaults to the workflow defaults and the contract’s queue names', () => {
    const config = parseConfig({}, { cores: 2 });
    expect(jobSettingsOf(config)).toEqual(JOB_DEFAULTS);
    expect(config.QUIRE_TASK_QUEUE).toBe(DEFAULT_TASK_QUEUE);
    expect(config.QUIRE_MAINTENANCE_TASK_QUEUE).toBe(MAINTENANCE_TASK_QUEUE);
  });

  it('J3 the defaults are the documented ones: five attempts, polish on the first three, retries from 2 s to 1 min', () => {
    expect(JOB_DEFAULTS).toEqual({
      maxAttempts: 5,
      polishAttempts: 3,
      retryInitialMs: 2_000,
      retryMaxMs: 60_000,
      heartbeatTimeoutMs: 15_000,
      recognizeSliceMs: 10_000,
    });
  });
});
