import { DefaultLogger, Runtime } from '@temporalio/worker';

// The workflow tests fail their mocked steps on purpose: the failures those steps raise and
// the story's own log lines about them are expected. Every other warning or error shows.
const expected = (entry: { message: string; meta?: Record<string, unknown> }) =>
  entry.message === 'Activity failed' || entry.meta?.sdkComponent === 'workflow';

try {
  const shown = new DefaultLogger('WARN');
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => {
      if (!expected(entry)) shown.log(entry.level, entry.message, entry.meta);
    }),
  });
} catch {
  // Already installed in this process.
}
