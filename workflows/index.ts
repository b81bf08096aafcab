// The workflows a Quire worker registers. Only deterministic code lives here.

export {
  blobCleanup,
  eventRetention,
  imageDerivatives,
  orphanSweep,
  reconcileJobs,
  strandedEngineJobSweep,
} from './maintenance';
export { transcriptionJob } from './transcriptionJob';
