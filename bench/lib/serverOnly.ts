import { register } from 'node:module';

/**
 * Lets a benchmark load web/ modules outside Next: `server-only` resolves to an empty module
 * (as vitest's alias does for the tests). Load with `--import ./bench/lib/serverOnly.ts`
 * after tsx. The `react-server` condition would do the same but hands Next's client modules
 * a React without `createContext`, which the session helpers import.
 */
const hook = `export async function resolve(specifier, context, next) {
  if (specifier === 'server-only') return { url: 'data:text/javascript,export {}', shortCircuit: true };
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
