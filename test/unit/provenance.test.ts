import { describe, expect, it } from 'vitest';
import { describeStep, provenanceOf, type RevisionRecord } from '../../core/interchange/provenance';

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

describe('V8 provenance of line text', () => {
  it('V8 an engine revision under the diplomatic rule says so; an older one says nothing of it', () => {
    const revisions = [
      row(1, { source: 'engine', engine: 'tesseract', modelVersion: '5.3.0' }),
      row(2, {
        source: 'engine',
        engine: 'tesseract',
        modelVersion: '5.3.0',
        provenance: { lineText: 'diplomatic' },
      }),
    ];
    const before = provenanceOf(revisions, 1).steps[0]!;
    const after = provenanceOf(revisions, 2).steps[0]!;
    expect(before).toMatchObject({ kind: 'engine', lineText: null });
    expect(after).toMatchObject({ kind: 'engine', lineText: 'diplomatic' });
    expect(describeStep(before)).not.toContain('diplomatic');
    expect(describeStep(after)).toBe(
      'revision 2: read by tesseract 5.3.0, line text diplomatic (each line as printed, words hyphenated at a line end not joined)',
    );
  });
});
