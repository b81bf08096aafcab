// The S3-compatible store lives in `./s3` and is imported from there, so processes using the
// local store never load the AWS SDK.
export { createLocalBlobStore } from './local';
export * from './store';
