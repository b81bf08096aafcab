/**
 * I8: who wrote the revision an export carries, in the terms ALTO `Description/Processing`
 * and PAGE `Metadata/MetadataItem` use. The steps are the revision's story since the page was
 * last read: the engine reading (engine, model, version) or the imported file (its format and
 * the software it names), then every human edit after it, in order. Pure: the revisions come
 * from `page_revisions` (db/pages.ts `listRevisions`), their editors named there (R7).
 */

import { type ActorNames, type ActorView, actorDisplay } from '../actor';

export interface RevisionRecord {
  revision: number;
  source: 'initial' | 'engine' | 'human' | 'import';
  engine: string | null;
  model: string | null;
  modelVersion: string | null;
  jobId: string | null;
  /** R7: the account or key that edited, by name. */
  editedByActor: ActorView | null;
  provenance: Record<string, unknown> | null;
  createdAt: Date;
}

export type ProvenanceStep =
  | {
      kind: 'engine';
      revision: number;
      at: Date;
      engine: string;
      model: string | null;
      version: string | null;
      jobId: string | null;
      /** V8: `diplomatic` when the engine's lines were committed as the image's lines say. */
      lineText: string | null;
    }
  | {
      kind: 'import';
      revision: number;
      at: Date;
      format: string;
      producer: string | null;
      filename: string | null;
    }
  | {
      kind: 'human';
      revision: number;
      at: Date;
      editedBy: string;
      /** R7: the account or key behind the name, kept beside it in an export (`account:7`). */
      editorRef: string | null;
    };

export interface ExportProvenance {
  /** The revision exported. */
  revision: number;
  steps: ProvenanceStep[];
  /** R7: the names of the accounts and keys behind the lines' stamps (db/actors.ts). */
  names?: ActorNames;
}

/** The steps that made `revision`: its last machine reading, then the human edits since. */
export function provenanceOf(
  revisions: readonly RevisionRecord[],
  revision: number,
): ExportProvenance {
  const upTo = [...revisions]
    .filter((r) => r.revision <= revision)
    .sort((a, b) => a.revision - b.revision);
  let start = 0;
  upTo.forEach((r, i) => {
    if (r.source === 'engine' || r.source === 'import') start = i;
  });
  const steps: ProvenanceStep[] = [];
  for (const r of upTo.slice(start)) {
    if (r.source === 'engine' && r.engine) {
      steps.push({
        kind: 'engine',
        revision: r.revision,
        at: r.createdAt,
        engine: r.engine,
        model: r.model,
        version: r.modelVersion,
        jobId: r.jobId,
        lineText: typeof r.provenance?.lineText === 'string' ? r.provenance.lineText : null,
      });
    } else if (r.source === 'import') {
      const p = r.provenance ?? {};
      steps.push({
        kind: 'import',
        revision: r.revision,
        at: r.createdAt,
        format: typeof p.format === 'string' ? p.format : 'unknown',
        producer: typeof p.producer === 'string' ? p.producer : null,
        filename: typeof p.filename === 'string' ? p.filename : null,
      });
    } else if (r.source === 'human') {
      steps.push({
        kind: 'human',
        revision: r.revision,
        at: r.createdAt,
        editedBy: r.editedByActor?.name ?? 'unknown',
        editorRef: r.editedByActor ? actorDisplay(r.editedByActor).ref : null,
      });
    }
  }
  return { revision, steps };
}

const FORMAT_NAMES: Record<string, string> = {
  page: 'a PAGE XML file',
  alto: 'an ALTO file',
  hocr: 'an hOCR file',
  pdf: "a PDF's text layer",
};

/** V8: how an engine's line text relates to the image, as the exports say it. */
const LINE_TEXT_NOTES: Record<string, string> = {
  diplomatic:
    'line text diplomatic (each line as printed, words hyphenated at a line end not joined)',
};

/** One sentence per step, for ALTO's processingStepDescription and PAGE's MetadataItem. */
export function describeStep(step: ProvenanceStep): string {
  switch (step.kind) {
    case 'engine':
      return `revision ${step.revision}: read by ${step.engine}${step.version ? ` ${step.version}` : ''}${step.model ? `, model ${step.model}` : ''}${step.jobId ? `, job ${step.jobId}` : ''}${step.lineText ? `, ${LINE_TEXT_NOTES[step.lineText] ?? `line text ${step.lineText}`}` : ''}`;
    case 'import':
      return `revision ${step.revision}: imported from ${FORMAT_NAMES[step.format] ?? 'a file'}${step.producer ? ` written by ${step.producer}` : ''}`;
    case 'human':
      return `revision ${step.revision}: edited by ${step.editedBy}`;
  }
}
