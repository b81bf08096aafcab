import { afterEach, describe, expect, it } from 'vitest';
import {
  type DevServer,
  findOrBuildTemporal,
  ONE_HOST_GO_RUNTIME,
  startDevServer,
} from '../../scripts/lib/temporal';
import { environOf } from '../support/proc';

const GO_SETTINGS = Object.keys(ONE_HOST_GO_RUNTIME);

describe('the dev server’s Go runtime (P6)', () => {
  let server: DevServer | undefined;
  const saved = Object.fromEntries(GO_SETTINGS.map((key) => [key, process.env[key]]));

  afterEach(async () => {
    await server?.stop();
    server = undefined;
    for (const key of GO_SETTINGS) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  });

  const start = async () => {
    server = await startDevServer(
      process.env.QUIRE_TEMPORAL_BIN_RESOLVED ?? findOrBuildTemporal(() => {}),
      { headless: true },
    );
    return environOf(server.process.pid!);
  };

  it('P6 the dev server runs on one Go processor, collecting at twice the live heap, freeing lazily', async () => {
    for (const key of GO_SETTINGS) delete process.env[key];
    const env = await start();
    expect({ GOMAXPROCS: env.GOMAXPROCS, GOGC: env.GOGC, GODEBUG: env.GODEBUG }).toEqual({
      GOMAXPROCS: '1',
      GOGC: '200',
      GODEBUG: 'madvdontneed=0',
    });
    // The rest of the environment still reaches it.
    expect(env.PATH).toBe(process.env.PATH);
  });

  it('P6 a Go setting in the environment wins over the dev server’s own, an empty one gives Go’s default', async () => {
    process.env.GOMAXPROCS = '2';
    process.env.GOGC = '150';
    process.env.GODEBUG = '';
    const env = await start();
    expect(env.GOMAXPROCS).toBe('2');
    expect(env.GOGC).toBe('150');
    expect(env.GODEBUG).toBe('');
  });
});
