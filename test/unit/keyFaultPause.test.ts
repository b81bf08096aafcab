import { describe, expect, it } from 'vitest';
import { keyFaultPauseMs } from '../../workflows/keyFault';

describe('pauses between tries of a step that met a fleet key fault (D1)', () => {
  it('D1 the first eight tries come a second apart, then the pause doubles up to a minute', () => {
    const pauses = Array.from({ length: 16 }, (_, faults) => keyFaultPauseMs(faults));
    expect(pauses.slice(0, 8)).toEqual(Array(8).fill(1_000));
    expect(pauses.slice(8, 14)).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
    expect(pauses.slice(14)).toEqual([60_000, 60_000]);
    expect(keyFaultPauseMs(10_000)).toBe(60_000);
  });
});
