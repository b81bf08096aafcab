import { DefaultLogger, Runtime } from '@temporalio/worker';

// Test output carries the SDK's warnings and errors only.
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process.
}
