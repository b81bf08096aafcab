import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TEMPORAL_DYNAMIC_CONFIG } from '../../scripts/lib/temporal';
import { workflowTaskSlots } from '../../worker/createWorker';

/**
 * P8, M5: the Temporal server settings priority and fairness rely on are the same in the dev
 * server's flags (scripts/lib/temporal.ts) and in deploy/temporal/dynamicconfig.yaml, which
 * cluster mode and compose load. The file's entries are `key:` then `  - value: X`.
 */
function dynamicConfigFile(): Record<string, unknown> {
  const text = readFileSync(
    new URL('../../deploy/temporal/dynamicconfig.yaml', import.meta.url),
    'utf8',
  );
  const settings: Record<string, unknown> = {};
  for (const match of text.matchAll(/^([\w.]+):\s*\n\s+- value:\s*(.+)$/gm))
    settings[match[1]!] = JSON.parse(match[2]!.trim());
  return settings;
}

describe('Temporal server settings (P6, P8, M5)', () => {
  it('P8 M5 the dev server runs with the matching settings that cluster mode and compose load', () => {
    const file = dynamicConfigFile();
    for (const [key, value] of Object.entries(TEMPORAL_DYNAMIC_CONFIG))
      expect({ key, value: file[key] }).toEqual({ key, value });
    expect(TEMPORAL_DYNAMIC_CONFIG).toMatchObject({
      'matching.useNewMatcher': true,
      'matching.enableFairness': true,
      'matching.numTaskqueueReadPartitions': 1,
      'matching.numTaskqueueWritePartitions': 1,
    });
  });

  it("P6 search attributes come from the server's caches, not its database, in every mode", () => {
    // On, every search-attribute lookup (a start, an upsert, a visibility write) reads the
    // namespace and the cluster metadata from the database under one lock.
    expect(TEMPORAL_DYNAMIC_CONFIG['system.forceSearchAttributesCacheRefreshOnRead']).toBe(false);
    expect(dynamicConfigFile()['system.forceSearchAttributesCacheRefreshOnRead']).toBe(false);
  });

  it('P8 a worker holds workflow tasks for half its activity slots, at least 4', () => {
    expect([1, 4, 8, 9, 16].map(workflowTaskSlots)).toEqual([4, 4, 4, 5, 8]);
  });
});
