// The workflows a Quire worker registers. Only deterministic code lives here.
export { transcriptionJob } from './transcriptionJob';
export { blobCleanup, eventRetention, orphanSweep, reconcileJobs, strandedEngineJobSweep } from './reconcile';
