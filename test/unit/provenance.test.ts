import { describe, expect, it } from 'vitest';
import { provenanceOf, type RevisionRecord } from '../../core/interchange/provenance';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
const row = (revision: number, patch: Partial<RevisionRecord>): RevisionRecord => ({
  revision,
  source: 'human',
  engine: null,
  model: null,
  modelVersion: null,
  jobId: null,
  editedByActor: null,
  provenance: null,
  createdAt: at(revision),
  ...patch,
});

const editor = (name: string) => ({ type: 'account' as const, id: 1, name });

const history: RevisionRecord[] = [
  row(0, { source: 'initial' }),
  row(1, { source: 'engine', engine: 'kraken', model: 'a', modelVersion: '4.3', jobId: 'j1' }),
  row(2, { editedByActor: editor('ada') }),
  row(3, { source: 'engine', engine: 'tesseract', model: 'frk', modelVersion: '5.3.0' }),
  row(4, { editedByActor: editor('ben') }),
  row(5, { editedByActor: editor('cy') }),
];

describe('I8 provenance of a revision', () => {
  it('I8 the steps are the last engine reading and the human edits after it, in order', () => {
    const { steps } = provenanceOf(history, 5);
    expect(steps.map((s) => [s.kind, s.revision])).toEqual([
      ['engine', 3],
      ['human', 4],
      ['human', 5],
    ]);
    expect(steps[0]).toMatchObject({ engine: 'tesseract', model: 'frk', version: '5.3.0' });
  });

  it('I8 an older revision (a published one) gets its own story, not the later edits', () => {
    expect(provenanceOf(history, 2).steps.map((s) => [s.kind, s.revision])).toEqual([
      ['engine', 1],
      ['human', 2],
    ]);
  });

  it('I8 an imported revision names its format and producer; a page never read has no steps', () => {
    const imported = [
      row(0, { source: 'initial' }),
      row(1, {
        source: 'import',
        provenance: { format: 'pdf', producer: 'ABBYY', filename: 'a.pdf' },
      }),
    ];
    expect(provenanceOf(imported, 1).steps).toEqual([
      {
        kind: 'import',
        revision: 1,
        at: at(1),
        format: 'pdf',
        producer: 'ABBYY',
        filename: 'a.pdf',
      },
    ]);
    expect(provenanceOf([row(0, { source: 'initial' })], 0).steps).toEqual([]);
  });
});
