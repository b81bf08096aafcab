/**
 * The README, docs/ and the fixtures' SOURCES files cite only files that exist in the
 * repository, so a clone with nothing beside it can follow its own documentation, and a
 * renamed module cannot leave a guide pointing at nothing.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/fixtures';

function documents(): string[] {
  const docs = readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`);
  const sources = readdirSync(path.join(REPO_ROOT, 'test', 'fixtures'))
    .map((dir) => `test/fixtures/${dir}/SOURCES.md`)
    .filter((f) => existsSync(path.join(REPO_ROOT, f)));
  return ['README.md', ...docs, ...sources];
}

// A backticked token is taken for a path when it starts with one of the repository's own
// top-level entries and names something below it; bare file names are left alone, since
// they are read against the folder named beside them.
const TOP_LEVEL = new Set(
  readdirSync(REPO_ROOT).filter((n) => !['node_modules', '.git', '.data'].includes(n)),
);

/** Paths matching `glob`, where `*` stands for any part of one path segment. */
function globMatches(glob: string): string[] {
  let found = [''];
  for (const segment of glob.split('/').filter(Boolean)) {
    const pattern = new RegExp(
      `^${segment.replace(/[.+?^${}()|\\[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`,
    );
    found = found.flatMap((dir) => {
      const full = path.join(REPO_ROOT, dir);
      if (!segment.includes('*'))
        return existsSync(path.join(full, segment)) ? [path.join(dir, segment)] : [];
      if (!existsSync(full) || !statSync(full).isDirectory()) return [];
      return readdirSync(full)
        .filter((n) => pattern.test(n))
        .map((n) => path.join(dir, n));
    });
  }
  return found;
}

/** Whether `mention` (relative to the repository) names something that exists. */
function exists(mention: string): boolean {
  // `providers/<name>.ts`, `web/app/api/v1/...`: the folder before the placeholder must exist.
  const placeholder = mention.search(/<|\.\.\./);
  if (placeholder >= 0) return existsSync(path.join(REPO_ROOT, mention.slice(0, placeholder)));
  if (mention.includes('*')) return globMatches(mention).length > 0;
  return existsSync(path.join(REPO_ROOT, mention));
}

function brokenMentions(doc: string): string[] {
  const broken: string[] = [];
  readFileSync(path.join(REPO_ROOT, doc), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const where = `${doc}:${i + 1}`;
      for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/.test(target) || target.startsWith('#')) continue;
        const file = path.join(path.dirname(doc), target.split('#')[0]!);
        if (!existsSync(path.join(REPO_ROOT, file))) broken.push(`${where} link ${target}`);
      }
      for (const [, token] of line.matchAll(/`([^`\s]+)`/g)) {
        // Line anchors and trailing punctuation are not part of the path.
        const mention = token!.replace(/[:#].*$/, '').replace(/[,;]$/, '');
        const [first] = mention.split('/');
        if (!mention.includes('/') || !TOP_LEVEL.has(first!)) continue;
        if (!exists(mention)) broken.push(`${where} path ${mention}`);
      }
    });
  return broken;
}

describe('documentation', () => {
  it('README.md, docs/ and the fixtures SOURCES.md cite only files that exist in the repository', () => {
    const docs = documents();
    expect(docs).toContain('docs/style.md');
    expect(docs.flatMap(brokenMentions)).toEqual([]);
  });
});
