import { describe, expect, it } from 'vitest';
import { EnginePool } from '../../providers/enginePool';

/** A call that holds its slot until released, recording when it started. */
function held(pool: EnginePool, name: string, started: string[], first?: boolean) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  const running = pool.run(
    undefined,
    async () => {
      started.push(name);
      await done;
    },
    { first },
  );
  return { release, running };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('engine pool order (P2, P8)', () => {
  it('P8 a person’s call waiting for an engine slot goes ahead of every bulk call waiting, behind other people’s, in order', async () => {
    const pool = new EnginePool(1);
    const started: string[] = [];
    const calls = [
      held(pool, 'bulk-running', started),
      held(pool, 'bulk-1', started),
      held(pool, 'bulk-2', started),
      held(pool, 'person-1', started, true),
      held(pool, 'person-2', started, true),
      held(pool, 'bulk-3', started),
    ];
    await tick();
    expect(started).toEqual(['bulk-running']);
    expect(pool.stats()).toMatchObject({ busy: 1, waiting: 5 });
    // Released before they start, each waiting call runs the moment it takes the slot.
    for (const call of calls) call.release();
    await Promise.all(calls.map((call) => call.running));
    expect(started).toEqual(['bulk-running', 'person-1', 'person-2', 'bulk-1', 'bulk-2', 'bulk-3']);
  });

  it('P2 without people waiting, calls take the slots in the order they asked', async () => {
    const pool = new EnginePool(2);
    const started: string[] = [];
    const calls = ['a', 'b', 'c', 'd'].map((name) => held(pool, name, started));
    await tick();
    expect(started).toEqual(['a', 'b']);
    // Released before they start, each waiting call runs the moment it takes the slot.
    for (const call of calls) call.release();
    await Promise.all(calls.map((call) => call.running));
    expect(started).toEqual(['a', 'b', 'c', 'd']);
  });

  it('P8 a person’s call that aborts while waiting leaves the line without taking a slot', async () => {
    const pool = new EnginePool(1);
    const started: string[] = [];
    const first = held(pool, 'bulk', started);
    const abort = new AbortController();
    const person = pool.run(abort.signal, async () => started.push('person'), { first: true });
    const bulk = held(pool, 'bulk-after', started);
    abort.abort(new Error('cancelled'));
    await expect(person).rejects.toThrow('cancelled');
    first.release();
    await first.running;
    await tick();
    expect(started).toEqual(['bulk', 'bulk-after']);
    bulk.release();
    await bulk.running;
  });
});
