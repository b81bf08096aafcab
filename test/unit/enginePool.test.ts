import { describe, expect, it } from 'vitest';
import { EnginePool } from '../../providers/enginePool';

/** A call that holds its slot until released, recording when it started. */
function held(pool: EnginePool, name: string, started: string[], first?: boolean) {
  let running = false;
  let release!: () => void;
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  const call = pool.run(
    undefined,
    async () => {
      started.push(name);
      running = true;
      await done;
      running = false;
    },
    { first },
  );
  return { release, running: call, isRunning: () => running };
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

  it('P8 with room for people, a person’s call starts at once beside the bulk calls holding every slot, and no bulk call starts until it ends', async () => {
    const pool = new EnginePool(2, { roomForPeople: true });
    const started: string[] = [];
    const bulk = [held(pool, 'bulk-1', started), held(pool, 'bulk-2', started)];
    const waitingBulk = [held(pool, 'bulk-3', started), held(pool, 'bulk-4', started)];
    await tick();
    const person = held(pool, 'person-1', started, true);
    await tick();
    expect(started).toEqual(['bulk-1', 'bulk-2', 'person-1']);
    expect(pool.stats()).toMatchObject({ busy: 3, waiting: 2 });
    // A bulk call ends while the person's runs: the slot it frees stays free.
    bulk[0]!.release();
    await bulk[0]!.running;
    await tick();
    expect(started).toEqual(['bulk-1', 'bulk-2', 'person-1']);
    expect(pool.stats()).toMatchObject({ busy: 2, waiting: 2 });
    // The person's ends: the process is under its size again and the next bulk call goes.
    person.release();
    await person.running;
    await tick();
    expect(started).toEqual(['bulk-1', 'bulk-2', 'person-1', 'bulk-3']);
    expect(waitingBulk[1]!.isRunning()).toBe(false);
    for (const call of [bulk[1]!, ...waitingBulk]) call.release();
    await Promise.all([bulk[1]!, ...waitingBulk].map((call) => call.running));
    expect(started).toEqual(['bulk-1', 'bulk-2', 'person-1', 'bulk-3', 'bulk-4']);
  });

  it('P8 with room for people, people’s calls beyond the pool’s size wait, ahead of the bulk calls', async () => {
    const pool = new EnginePool(1, { roomForPeople: true });
    const started: string[] = [];
    const calls = [
      held(pool, 'bulk-running', started),
      held(pool, 'bulk-1', started),
      held(pool, 'person-1', started, true),
      held(pool, 'person-2', started, true),
    ];
    await tick();
    expect(started).toEqual(['bulk-running', 'person-1']);
    expect(pool.stats()).toMatchObject({ busy: 2, waiting: 2, peakBusy: 2 });
    calls[2]!.release();
    await calls[2]!.running;
    await tick();
    expect(started).toEqual(['bulk-running', 'person-1', 'person-2']);
    for (const call of calls) call.release();
    await Promise.all(calls.map((call) => call.running));
    expect(started).toEqual(['bulk-running', 'person-1', 'person-2', 'bulk-1']);
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
