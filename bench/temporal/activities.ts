import { Context } from '@temporalio/activity';

/**
 * bench/temporal's steps: no work, only what each shape asks of the Temporal server; the
 * engine step waits `stepMs` (an engine's time, spent asleep).
 */
export function shapeActivities(stepMs: number) {
  const engineTime = () => new Promise((r) => setTimeout(r, stepMs));
  return {
    async claim(): Promise<number> {
      return 1;
    },
    /** `heartbeat`: whether the step heartbeats at its start, as Quire's engine steps do (D7). */
    async engineStep(heartbeat: boolean): Promise<number> {
      if (heartbeat) Context.current().heartbeat({ at: Date.now() });
      await engineTime();
      return 1;
    },
    async localEngineStep(): Promise<number> {
      await engineTime();
      return 1;
    },
  };
}
