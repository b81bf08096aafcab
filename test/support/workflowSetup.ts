import { bundleWorkflows, startSharedTemporal } from './globalSetup';

/**
 * The workflow tests' setup: the real workflow bundle on the run's Temporal dev server, and
 * nothing else (their activities are in-memory mocks: no database).
 */
export default async function setup() {
  const temporal = await startSharedTemporal();
  const bundle = await bundleWorkflows();
  return async () => {
    bundle.remove();
    await temporal.stop();
  };
}
