'use client';
import type { EngineModel } from '@quire/core/engineModels';
import { isPdfHeader, sniffMediaType } from '@quire/core/media';
import { useRouter } from 'next/navigation';
import { useId, useRef, useState } from 'react';
import { formatBytes } from './format';
import { appendChoice, NO_CHOICE, UploadChoices } from './UploadChoices';

/**
 * Upload: drop or pick many images or recordings, see each file's progress and validation,
 * and send them as one batch (one request, so the batch is all-or-nothing like the API's).
 * Progress comes from XMLHttpRequest upload events; each file's share is read off the byte
 * offsets of the multipart body, in the order the files are sent.
 */
const ACCEPT =
  '.pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp,.wav,.flac,.mp3,.ogg,.oga,.m4a,.mp4,application/pdf,image/*,audio/*';
const EXTENSIONS = [
  'pdf',
  'png',
  'jpg',
  'jpeg',
  'tif',
  'tiff',
  'webp',
  'wav',
  'flac',
  'mp3',
  'ogg',
  'oga',
  'm4a',
  'mp4',
];
const MAX_FILE_BYTES = 1024 * 1024 * 1024;

type FileState =
  | { kind: 'ready' }
  | { kind: 'invalid'; message: string }
  | { kind: 'uploading'; loaded: number }
  | { kind: 'stored' }
  | { kind: 'rejected'; message: string }
  | { kind: 'not-stored' };

interface Entry {
  id: number;
  file: File;
  state: FileState;
  /** I3, I6: a PAGE XML, ALTO or hOCR transcript of this image, sent right after it. */
  transcript?: File;
  transcriptError?: string;
}

const MAX_TRANSCRIPT_BYTES = 8 * 1024 * 1024;

/** I3, I6: PAGE and ALTO are XML; hOCR is XHTML, named .hocr, .html or .xhtml. */
const TRANSCRIPT_NAME = /\.(xml|hocr|html?|xhtml)$/i;
const TRANSCRIPT_TYPE = /xml|^text\/html$/;

/** What the ingest checks first about a transcript, shown beside its image. */
function transcriptProblem(file: File): string | null {
  if (!TRANSCRIPT_NAME.test(file.name) && !TRANSCRIPT_TYPE.test(file.type))
    return 'Not a PAGE XML, ALTO or hOCR file.';
  if (file.size === 0) return 'The transcript is empty.';
  if (file.size > MAX_TRANSCRIPT_BYTES)
    return `The transcript is larger than ${formatBytes(MAX_TRANSCRIPT_BYTES)}.`;
  return null;
}

/** The checks the server makes first, made here so each file's problem is shown beside it. */
async function validate(file: File): Promise<string | null> {
  const extension = file.name.includes('.') ? file.name.split('.').pop()!.toLowerCase() : '';
  const typeOk =
    file.type.startsWith('image/') ||
    file.type.startsWith('audio/') ||
    EXTENSIONS.includes(extension);
  if (!typeOk)
    return 'Not an image or audio file (PDF, PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, Ogg, M4A).';
  if (file.size === 0) return 'The file is empty.';
  if (file.size > MAX_FILE_BYTES) return `Larger than ${formatBytes(MAX_FILE_BYTES)}.`;
  // The same magic-byte sniffing as the ingest (U4): a renamed text file is caught here.
  const head = new Uint8Array(await file.slice(0, 64).arrayBuffer());
  if (!sniffMediaType(head) && !isPdfHeader(head)) {
    return 'Its contents are not a PDF, PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, Ogg or M4A file.';
  }
  return null;
}

export function Uploader({
  models,
  collections,
}: {
  /** V9: the models this installation has, for the person to choose from. */
  models: EngineModel[];
  collections: { id: number; label: string }[];
}) {
  const router = useRouter();
  const inputId = useId();
  const counter = useRef(0);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [dragging, setDragging] = useState(false);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ tone: 'error' | 'ok'; text: string } | null>(null);
  const [mode, setMode] = useState<'perFile' | 'single'>('perFile');
  const [choice, setChoice] = useState(NO_CHOICE);

  const add = async (files: File[]) => {
    setMessage(null);
    const added: Entry[] = await Promise.all(
      files.map(async (file) => {
        counter.current += 1;
        const id = counter.current;
        const problem = await validate(file).catch(() => 'The file could not be read.');
        return {
          id,
          file,
          state: problem
            ? ({ kind: 'invalid', message: problem } as const)
            : ({ kind: 'ready' } as const),
        };
      }),
    );
    setEntries((current) => [...current.filter((e) => e.state.kind !== 'stored'), ...added]);
  };

  const remove = (id: number) => setEntries((current) => current.filter((e) => e.id !== id));

  const attachTranscript = (id: number, transcript: File | undefined) =>
    setEntries((current) =>
      current.map((e) => {
        if (e.id !== id) return e;
        const problem = transcript ? transcriptProblem(transcript) : null;
        // A refused transcript leaves the image as it was; the problem shows beside the picker.
        const { transcript: _old, transcriptError: _oldError, ...rest } = e;
        if (problem) return { ...rest, transcriptError: problem };
        const state = e.state.kind === 'rejected' ? ({ kind: 'ready' } as const) : e.state;
        return transcript ? { ...rest, transcript, state } : { ...rest, state };
      }),
    );

  const sendable = entries.filter(
    (e) => e.state.kind !== 'invalid' && e.state.kind !== 'rejected' && e.state.kind !== 'stored',
  );

  const upload = () => {
    if (sendable.length === 0 || busy) return;
    const sending = sendable;
    const ids = new Set(sending.map((e) => e.id));
    const form = new FormData();
    form.set('mode', mode);
    appendChoice(form, { ...choice, title: mode === 'single' ? choice.title : '' }, models);
    for (const entry of sending) {
      form.append('files[]', entry.file, entry.file.name);
      // Beside its image: the ingest reads a transcript as the one of the file just before it.
      if (entry.transcript) form.append('transcript', entry.transcript, entry.transcript.name);
    }
    // Approximate byte ranges of each file in the body (headers of each part are small).
    const ends: number[] = [];
    let offset = 0;
    for (const entry of sending) {
      offset += entry.file.size + (entry.transcript ? entry.transcript.size + 200 : 0) + 200;
      ends.push(offset);
    }
    setBusy(true);
    setMessage(null);
    setEntries((current) =>
      current.map((e) => (ids.has(e.id) ? { ...e, state: { kind: 'uploading', loaded: 0 } } : e)),
    );
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/console-api/batches');
    xhr.responseType = 'json';
    xhr.upload.onprogress = (event) => {
      const scale = event.lengthComputable && event.total > 0 ? offset / event.total : 1;
      const sent = event.loaded * scale;
      setEntries((current) =>
        current.map((e) => {
          const i = sending.findIndex((s) => s.id === e.id);
          if (i < 0) return e;
          const start = i === 0 ? 0 : ends[i - 1]!;
          const loaded = Math.max(0, Math.min(e.file.size, sent - start));
          return { ...e, state: { kind: 'uploading', loaded } };
        }),
      );
    };
    xhr.onerror = () => {
      setBusy(false);
      setMessage({
        tone: 'error',
        text: 'The connection failed before the upload finished. Nothing was stored; try again.',
      });
      setEntries((current) =>
        current.map((e) => (ids.has(e.id) ? { ...e, state: { kind: 'ready' } } : e)),
      );
    };
    xhr.onload = () => {
      setBusy(false);
      const body = xhr.response as
        | { batchId: string; pages: Array<{ pageId: number; jobId?: string }> }
        | { error: { code: string; message: string; fileIndex?: number } }
        | null;
      if (xhr.status === 201 && body && 'batchId' in body) {
        setEntries((current) =>
          current.map((e) => (ids.has(e.id) ? { ...e, state: { kind: 'stored' } } : e)),
        );
        setMessage({
          tone: 'ok',
          text: `Batch created with ${body.pages.length} page(s). Opening it…`,
        });
        router.push(`/batches/${body.batchId}`);
        return;
      }
      if (xhr.status === 401) {
        router.push('/signin');
        return;
      }
      const error =
        body && 'error' in body ? body.error : { code: 'internal', message: 'The upload failed.' };
      const culprit = error.fileIndex !== undefined ? sending[error.fileIndex] : undefined;
      setEntries((current) =>
        current.map((e) => {
          if (culprit && e.id === culprit.id)
            return { ...e, state: { kind: 'rejected', message: error.message } };
          return ids.has(e.id) ? { ...e, state: { kind: 'not-stored' } } : e;
        }),
      );
      setMessage({
        tone: 'error',
        text: culprit
          ? `“${culprit.file.name}” was refused, so nothing was stored. Remove it and upload the others again.`
          : `The batch was refused: ${error.message}`,
      });
    };
    xhr.send(form);
  };

  return (
    <div className="uploader">
      {/* biome-ignore lint/a11y/noStaticElementInteractions: dropping is a pointer shortcut; "Choose files" is the keyboard path */}
      <div
        className={`dropzone${dragging ? ' dropzone-active' : ''}`}
        onDragEnter={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragOver={(e) => {
          e.preventDefault();
          e.dataTransfer.dropEffect = 'copy';
        }}
        onDragLeave={(e) => {
          if (e.currentTarget.contains(e.relatedTarget as Node | null)) return;
          setDragging(false);
        }}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          if (e.dataTransfer.files.length > 0) void add(Array.from(e.dataTransfer.files));
        }}
        data-testid="dropzone"
      >
        <p className="dropzone-title">Drop page images or recordings here</p>
        <p className="muted">PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, Ogg or M4A; up to 1 GB each.</p>
        <label htmlFor={inputId} className="button secondary">
          Choose files…
        </label>
        <input
          id={inputId}
          className="file-input"
          type="file"
          multiple
          accept={ACCEPT}
          onChange={(e) => {
            if (e.target.files && e.target.files.length > 0) void add(Array.from(e.target.files));
            e.target.value = '';
          }}
        />
      </div>

      {entries.length > 0 ? (
        <ul className="file-list" aria-label="Files to upload">
          {entries.map((entry) => (
            <li
              key={entry.id}
              className={`file file-${entry.state.kind}`}
              data-file={entry.file.name}
            >
              <div className="file-main">
                <span className="file-name">{entry.file.name}</span>
                <span className="muted small">{formatBytes(entry.file.size)}</span>
              </div>
              <FileStatus entry={entry} />
              {entry.state.kind !== 'uploading' && entry.state.kind !== 'stored' ? (
                <TranscriptPicker entry={entry} onPick={(t) => attachTranscript(entry.id, t)} />
              ) : null}
              {entry.state.kind !== 'uploading' && entry.state.kind !== 'stored' ? (
                <button
                  type="button"
                  className="link"
                  onClick={() => remove(entry.id)}
                  aria-label={`Remove ${entry.file.name}`}
                >
                  Remove
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}

      <fieldset className="choices">
        <legend>Items</legend>
        <label>
          <input
            type="radio"
            name="mode"
            value="perFile"
            checked={mode === 'perFile'}
            onChange={() => setMode('perFile')}
          />{' '}
          One item per file
        </label>
        <label>
          <input
            type="radio"
            name="mode"
            value="single"
            checked={mode === 'single'}
            onChange={() => setMode('single')}
          />{' '}
          One item, the files as its pages in this order
        </label>
      </fieldset>

      <UploadChoices
        models={models}
        collections={collections}
        choice={choice}
        single={mode === 'single'}
        onChange={setChoice}
      />

      <div className="actions">
        <button
          type="button"
          onClick={upload}
          disabled={busy || sendable.length === 0}
          data-act="batch.create"
        >
          {busy ? 'Uploading…' : sendable.length > 1 ? `Upload ${sendable.length} files` : 'Upload'}
        </button>
        <span
          role="status"
          aria-live="polite"
          className={message?.tone === 'error' ? 'error' : 'ok'}
        >
          {message?.text ?? ''}
        </span>
      </div>
    </div>
  );
}

/** I3, I6: an optional PAGE XML, ALTO or hOCR file for this image; its lines become revision 1. */
function TranscriptPicker({
  entry,
  onPick,
}: {
  entry: Entry;
  onPick: (transcript: File | undefined) => void;
}) {
  const id = useId();
  if (entry.transcript) {
    return (
      <span className="file-transcript small">
        Transcript: {entry.transcript.name}{' '}
        <button
          type="button"
          className="link"
          onClick={() => onPick(undefined)}
          aria-label={`Remove the transcript of ${entry.file.name}`}
        >
          Remove transcript
        </button>
      </span>
    );
  }
  return (
    <span className="file-transcript small">
      {entry.transcriptError ? (
        <span className="error" role="alert">
          {entry.transcriptError}{' '}
        </span>
      ) : null}
      <label htmlFor={id} className="link">
        Add transcript (PAGE, ALTO or hOCR)…
      </label>
      <input
        id={id}
        className="file-input"
        type="file"
        accept=".xml,.hocr,.html,.htm,.xhtml,application/xml,text/xml,application/xhtml+xml,text/html"
        aria-label={`Transcript of ${entry.file.name}, PAGE XML, ALTO or hOCR`}
        onChange={(e) => {
          const picked = e.target.files?.[0];
          if (picked) onPick(picked);
          e.target.value = '';
        }}
      />
    </span>
  );
}

function FileStatus({ entry }: { entry: Entry }) {
  const s = entry.state;
  switch (s.kind) {
    case 'ready':
      return <span className="file-status muted">Ready</span>;
    case 'invalid':
    case 'rejected':
      return (
        <span className="file-status error" role="alert">
          {s.message}
        </span>
      );
    case 'uploading': {
      const pct = Math.round((s.loaded / Math.max(1, entry.file.size)) * 100);
      return (
        <span className="file-status">
          <progress max={100} value={pct} aria-label={`Upload of ${entry.file.name}`} /> {pct}%
        </span>
      );
    }
    case 'stored':
      return <span className="file-status ok">Stored</span>;
    case 'not-stored':
      return <span className="file-status muted">Not stored (the batch was refused)</span>;
  }
}
