'use client';
import { type ActorDisplay, actorDisplay, actorOfLineAuthor, actorView } from '@quire/core/actor';
import type { LineState } from '@quire/core/annotation';
import type { MediaKind } from '@quire/core/media';
import {
  assignSpeakerAction,
  renameSpeakerAction,
  type SaveResult,
  savePageAction,
  verifyLinesAction,
} from '@quire/web/app/pages/actions';
import { useEffect, useRef, useState, useTransition } from 'react';
import { formatSeconds } from './format';
import { PageImage } from './PageImageView';
import type { Zoom } from './pageImage';

export interface ViewSegment {
  index: number;
  text: string;
  box?: { x: number; y: number; w: number; h: number };
  start?: number;
  end?: number;
  speaker?: string;
  /** V1: machine, edited or verified, and who set it. */
  state: LineState;
  stateBy?: string;
}

interface Props {
  pageId: number;
  kind: MediaKind;
  width: number | null;
  height: number | null;
  revision: number;
  segments: ViewSegment[];
  /** V7: an image page's Image API service (drawn through it, never as the master). */
  imageService: string | null;
  /** A recording's URL. */
  mediaUrl: string | null;
  /** V7: the page drawn 1, 2 or 4 times the viewer's width (`?zoom=`). */
  zoom?: Zoom;
  /** V6: what the workspace does with a recording once the engine holds it. */
  recordingRetention: 'keep' | 'delete-after-recognition';
  /** F3: the line a search hit named (`?line=`), selected and scrolled to on arrival. */
  initialLine?: number | null;
  /** R8: the role may edit and verify lines (core/roles.ts `page.edit`); else the page is read. */
  mayEdit: boolean;
}

type Conflict = {
  revision: number;
  current: Map<number, string>;
  choice: Map<number, 'mine' | 'theirs'>;
  /** V4: who wrote the other text of each line, when known (R7: by name, the id beneath). */
  authors: Map<number, ActorDisplay>;
};

/** V1: the words a line's state is shown with. */
export const STATE_LABEL: Record<LineState, string> = {
  machine: 'machine',
  imported: 'imported',
  edited: 'edited',
  verified: 'verified',
};

/**
 * The page view's working area: the image with its line boxes (or the audio player) beside
 * the transcript, one highlighted line shared by both; inline editing saved by
 * compare-and-set on the revision shown. A stale save shows, for every line edited, the
 * editor's text and the page's current text side by side; nothing typed is dropped until
 * the editor chooses.
 */
export function PageWorkspace({
  pageId,
  kind,
  width,
  height,
  revision,
  segments,
  imageService,
  mediaUrl,
  recordingRetention,
  zoom = 1,
  initialLine = null,
  mayEdit,
}: Props) {
  const [active, setActive] = useState<number | null>(null);
  const [selected, setSelected] = useState<number | null>(
    initialLine !== null && segments.some((s) => s.index === initialLine) ? initialLine : null,
  );
  const linesRef = useRef<HTMLOListElement>(null);
  const [editing, setEditing] = useState(false);
  const [drafts, setDrafts] = useState<Map<number, string>>(new Map());
  const [baseRevision, setBaseRevision] = useState(revision);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const [status, setStatus] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const [pending, startTransition] = useTransition();
  const audio = useRef<HTMLAudioElement>(null);
  const [playing, setPlaying] = useState<number | null>(null);
  const highlighted = active ?? selected ?? playing;

  // A newer revision rendered by the server (after a save or a job) resets the view when
  // nothing is being edited; during an edit the drafts and their base revision stay.
  useEffect(() => {
    if (!editing && !conflict) setBaseRevision(revision);
  }, [revision, editing, conflict]);

  // F3: a search hit's line is brought into view once, with its box outlined on the image.
  // biome-ignore lint/correctness/useExhaustiveDependencies: only on arrival, not on every selection
  useEffect(() => {
    if (initialLine === null) return;
    const line = linesRef.current?.querySelector(`[data-line="${initialLine}"]`);
    const box = document.querySelector(`rect[data-line="${initialLine}"]`);
    (box ?? line)?.scrollIntoView({ block: 'center' });
  }, []);

  const textOf = (s: ViewSegment) => drafts.get(s.index) ?? s.text;
  const changed = segments.filter((s) => drafts.has(s.index) && drafts.get(s.index) !== s.text);

  const settle = (
    result: SaveResult,
    edits: Array<{ index: number; text: string }>,
    from: number,
  ) => {
    if (result.state === 'committed') {
      setDrafts(new Map());
      setConflict(null);
      setEditing(false);
      setBaseRevision(result.revision);
      setStatus({
        tone: 'ok',
        text: result.merged
          ? `Saved as revision ${result.revision}, on top of changes to other lines saved since revision ${from}.`
          : `Saved as revision ${result.revision}.`,
      });
    } else if (result.state === 'conflict' || result.state === 'lineConflict') {
      const current = new Map(result.current.map((c) => [c.index, c.text]));
      const choice = new Map<number, 'mine' | 'theirs'>();
      const authors = new Map<number, ActorDisplay>();
      if (result.state === 'lineConflict') {
        for (const c of result.conflicts) {
          choice.set(c.index, 'mine');
          if (c.theirs?.by && c.theirs.byName) {
            const by = actorView(actorOfLineAuthor(c.theirs.by), new Map(), c.theirs.byName);
            authors.set(c.index, actorDisplay(by));
          }
        }
      } else {
        for (const e of edits) choice.set(e.index, 'mine');
      }
      setConflict({ revision: result.revision, current, choice, authors });
      setStatus({
        tone: 'error',
        text: `Someone changed ${choice.size === 1 ? 'a line' : `${choice.size} lines`} you edited since revision ${from} (the page is now at revision ${result.revision}). Nothing was overwritten: choose, line by line, which text to keep.`,
      });
    } else {
      setStatus({ tone: 'error', text: result.message });
    }
  };

  const save = (edits: Array<{ index: number; text: string }>, expectedRevision: number) => {
    setStatus(null);
    startTransition(async () => {
      let result: SaveResult;
      try {
        result = await savePageAction({ pageId, expectedRevision, edits });
      } catch {
        setStatus({
          tone: 'error',
          text: 'The edit could not be saved; your text is still here. Try again.',
        });
        return;
      }
      settle(result, edits, expectedRevision);
    });
  };

  const verifyAll = () => {
    const lines = segments.filter((s) => s.state !== 'verified').map((s) => s.index);
    if (lines.length === 0) return;
    setStatus(null);
    startTransition(async () => {
      const result = await verifyLinesAction({ pageId, expectedRevision: baseRevision, lines });
      settle(result, [], baseRevision);
    });
  };

  const speakers = [...new Set(segments.flatMap((s) => (s.speaker ? [s.speaker] : [])))];
  // V11: a line offered for a speaker's span by its number, and its time where it has one.
  const lineChoices = segments.map((s) => (
    <option key={s.index} value={s.index}>
      {s.index + 1}
      {s.start !== undefined ? ` (${formatSeconds(s.start)})` : ''}
    </option>
  ));
  const renameSpeaker = (form: FormData) => {
    const from = String(form.get('from') ?? '');
    const to = String(form.get('to') ?? '');
    setStatus(null);
    startTransition(async () => {
      const result = await renameSpeakerAction({
        pageId,
        expectedRevision: baseRevision,
        from,
        to,
      });
      settle(result, [], baseRevision);
    });
  };

  // V11: a speaker named for the lines from one to another (one line when both are the same).
  const assignSpeaker = (form: FormData) => {
    const from = Number(form.get('from'));
    const to = Number(form.get('to'));
    const speaker = String(form.get('speaker') ?? '');
    setStatus(null);
    startTransition(async () => {
      const result = await assignSpeakerAction({
        pageId,
        expectedRevision: baseRevision,
        from: Math.min(from, to),
        to: Math.max(from, to),
        speaker,
      });
      settle(result, [], baseRevision);
    });
  };

  const onSave = () => {
    if (changed.length === 0) {
      setEditing(false);
      setDrafts(new Map());
      return;
    }
    save(
      changed.map((s) => ({ index: s.index, text: drafts.get(s.index)! })),
      baseRevision,
    );
  };

  const onResolve = () => {
    if (!conflict) return;
    // The chosen text of each line in conflict, and every other line edited as typed.
    const edits = [
      ...[...conflict.choice.entries()].map(([index, which]) => ({
        index,
        text: which === 'mine' ? (drafts.get(index) ?? '') : (conflict.current.get(index) ?? ''),
      })),
      ...changed
        .filter((s) => !conflict.choice.has(s.index))
        .map((s) => ({ index: s.index, text: drafts.get(s.index)! })),
    ];
    save(edits, conflict.revision);
  };

  const seek = (s: ViewSegment) => {
    if (audio.current && s.start !== undefined) {
      audio.current.currentTime = s.start;
      void audio.current.play().catch(() => {});
    }
  };

  return (
    <div className={`workspace workspace-${kind}`}>
      <div className="viewer">
        {kind === 'image' ? (
          imageService ? (
            <PageImage
              pageId={pageId}
              service={imageService}
              size={width && height ? { width, height } : null}
              zoom={zoom}
            >
              {width && height ? (
                <svg
                  className="boxes"
                  viewBox={`0 0 ${width} ${height}`}
                  preserveAspectRatio="none"
                  aria-hidden="true"
                >
                  {segments.map((s) =>
                    s.box ? (
                      // biome-ignore lint/a11y/noStaticElementInteractions: a pointer shortcut; the transcript lines are the keyboard path
                      <rect
                        key={s.index}
                        data-line={s.index}
                        x={s.box.x}
                        y={s.box.y}
                        width={s.box.w}
                        height={s.box.h}
                        className={highlighted === s.index ? 'box box-active' : 'box'}
                        onMouseEnter={() => setActive(s.index)}
                        onMouseLeave={() => setActive(null)}
                        onClick={() => setSelected(selected === s.index ? null : s.index)}
                      />
                    ) : null,
                  )}
                </svg>
              ) : null}
            </PageImage>
          ) : (
            <p className="empty card muted">This page has no image.</p>
          )
        ) : mediaUrl ? (
          <div className="player card">
            {/* biome-ignore lint/a11y/useMediaCaption: the transcript beside the player is the caption */}
            <audio
              ref={audio}
              controls
              preload="metadata"
              src={mediaUrl}
              onTimeUpdate={(e) => {
                const t = e.currentTarget.currentTime;
                const hit = segments.find(
                  (s) => s.start !== undefined && s.end !== undefined && t >= s.start && t < s.end,
                );
                setPlaying(hit ? hit.index : null);
              }}
            />
            <p className="muted small">Select a segment to play from its start.</p>
          </div>
        ) : (
          <p className="empty card muted">
            {recordingRetention === 'delete-after-recognition'
              ? 'No recording is stored for this page: this workspace deletes its copy of a recording as soon as the speech engine holds it.'
              : 'No recording is stored for this page.'}
          </p>
        )}
      </div>

      <section className="transcript" aria-labelledby="transcript-heading">
        <div className="transcript-head">
          <h2 id="transcript-heading">
            Transcript <span className="muted small">revision {baseRevision}</span>
          </h2>
          {segments.length > 0 && !editing && !conflict && mayEdit ? (
            <div className="actions">
              <button
                type="button"
                className="secondary"
                onClick={() => setEditing(true)}
                data-act="page.edit"
              >
                Edit
              </button>
              {segments.some((s) => s.state !== 'verified') ? (
                <button
                  type="button"
                  className="secondary"
                  onClick={verifyAll}
                  disabled={pending}
                  data-act="page.edit"
                >
                  Verify all lines
                </button>
              ) : null}
            </div>
          ) : null}
        </div>
        {segments.length === 0 ? (
          <p className="empty muted">
            No transcript yet. It appears here when the page's job completes.
          </p>
        ) : conflict ? (
          <div className="conflict" data-testid="conflict">
            <p role="alert" className="notice notice-error">
              {status?.text}
            </p>
            <ol className="conflict-lines">
              {[...conflict.choice.keys()].map((index) => {
                const mine = drafts.get(index) ?? '';
                const theirs = conflict.current.get(index) ?? '';
                const author = conflict.authors.get(index);
                const name = `choice-${index}`;
                return (
                  <li key={index} className="conflict-line" data-line={index}>
                    <fieldset>
                      <legend>Line {index + 1}</legend>
                      <label
                        className={`choice${conflict.choice.get(index) === 'mine' ? ' choice-on' : ''}`}
                      >
                        <input
                          type="radio"
                          name={name}
                          checked={conflict.choice.get(index) === 'mine'}
                          onChange={() =>
                            setConflict({
                              ...conflict,
                              choice: new Map(conflict.choice).set(index, 'mine'),
                            })
                          }
                        />
                        <span className="choice-label">Your text</span>
                        <span className="choice-text" data-testid={`mine-${index}`}>
                          {mine}
                        </span>
                      </label>
                      <label
                        className={`choice${conflict.choice.get(index) === 'theirs' ? ' choice-on' : ''}`}
                      >
                        <input
                          type="radio"
                          name={name}
                          checked={conflict.choice.get(index) === 'theirs'}
                          onChange={() =>
                            setConflict({
                              ...conflict,
                              choice: new Map(conflict.choice).set(index, 'theirs'),
                            })
                          }
                        />
                        <span className="choice-label">
                          Revision {conflict.revision}
                          {author ? (
                            <>
                              , by{' '}
                              <span
                                className="actor"
                                title={author.title ?? undefined}
                                data-actor={author.ref ?? undefined}
                              >
                                {author.name}
                              </span>
                            </>
                          ) : null}
                        </span>
                        <span className="choice-text" data-testid={`theirs-${index}`}>
                          {theirs}
                        </span>
                      </label>
                    </fieldset>
                  </li>
                );
              })}
            </ol>
            <div className="actions">
              <button type="button" onClick={onResolve} disabled={pending}>
                {pending ? 'Saving…' : `Save on top of revision ${conflict.revision}`}
              </button>
            </div>
          </div>
        ) : (
          <ol className="lines" ref={linesRef}>
            {segments.map((s) => (
              <li
                key={s.index}
                data-line={s.index}
                className={highlighted === s.index ? 'line line-active' : 'line'}
                onMouseEnter={() => setActive(s.index)}
                onMouseLeave={() => setActive(null)}
              >
                {editing ? (
                  <label className="line-edit">
                    <span className="line-no">
                      <span className="sr-only">Line </span>
                      {s.index + 1}
                    </span>
                    <input
                      value={textOf(s)}
                      onFocus={() => setSelected(s.index)}
                      onChange={(e) => setDrafts(new Map(drafts).set(s.index, e.target.value))}
                      aria-label={`Line ${s.index + 1}`}
                      className={
                        drafts.has(s.index) && drafts.get(s.index) !== s.text ? 'edited' : undefined
                      }
                    />
                  </label>
                ) : (
                  <button
                    type="button"
                    className="line-button"
                    aria-pressed={selected === s.index}
                    onFocus={() => setActive(s.index)}
                    onBlur={() => setActive(null)}
                    onClick={() => {
                      setSelected(selected === s.index ? null : s.index);
                      if (kind === 'audio') seek(s);
                    }}
                  >
                    <span className="line-no">
                      {kind === 'audio' && s.start !== undefined
                        ? formatSeconds(s.start)
                        : s.index + 1}
                    </span>
                    {s.speaker ? <span className="speaker">{s.speaker}</span> : null}
                    <span className="line-text">
                      {s.text || <span className="muted">(empty)</span>}
                    </span>
                    <span
                      className={`line-state state-${s.state}`}
                      title={s.stateBy ? `${STATE_LABEL[s.state]} by ${s.stateBy}` : undefined}
                    >
                      {STATE_LABEL[s.state]}
                    </span>
                  </button>
                )}
              </li>
            ))}
          </ol>
        )}
        {editing && !conflict ? (
          <div className="actions sticky-actions">
            <button type="button" onClick={onSave} disabled={pending}>
              {pending
                ? 'Saving…'
                : changed.length > 0
                  ? `Save ${changed.length} change(s)`
                  : 'Done'}
            </button>
            <button
              type="button"
              className="secondary"
              disabled={pending}
              onClick={() => {
                setDrafts(new Map());
                setEditing(false);
                setStatus(null);
              }}
            >
              Discard
            </button>
          </div>
        ) : null}
        {kind === 'audio' && segments.length > 0 && !editing && !conflict && mayEdit ? (
          <section className="speakers card" aria-labelledby="speakers-heading">
            <h3 id="speakers-heading">Speakers</h3>
            <p className="muted small">
              Naming a speaker is not an edit of the text: every line keeps its state.
            </p>
            <datalist id={`speakers-${pageId}`}>
              {speakers.map((name) => (
                <option key={name} value={name} />
              ))}
            </datalist>
            <form
              action={assignSpeaker}
              className="speaker-assign"
              data-act="page.edit"
              // A line selected in the transcript is where the span starts and ends.
              key={`assign-${selected ?? 'none'}`}
            >
              <label>
                Lines{' '}
                <select name="from" defaultValue={selected ?? segments[0]!.index}>
                  {lineChoices}
                </select>
              </label>{' '}
              <label>
                to{' '}
                <select name="to" defaultValue={selected ?? segments[0]!.index}>
                  {lineChoices}
                </select>
              </label>{' '}
              <label>
                are spoken by{' '}
                <input name="speaker" required maxLength={200} list={`speakers-${pageId}`} />
              </label>{' '}
              <button type="submit" className="secondary" disabled={pending}>
                Name speaker
              </button>
            </form>
            {speakers.length > 0 ? (
              <form action={renameSpeaker} className="speaker-rename" data-act="page.edit">
                <label>
                  Speaker{' '}
                  <select name="from" defaultValue={speakers[0]}>
                    {speakers.map((name) => (
                      <option key={name} value={name}>
                        {name}
                      </option>
                    ))}
                  </select>
                </label>{' '}
                <label>
                  is <input name="to" required maxLength={200} />
                </label>{' '}
                <button type="submit" className="secondary" disabled={pending}>
                  Rename on every line
                </button>
              </form>
            ) : null}
          </section>
        ) : null}
        {!conflict ? (
          <p role="status" aria-live="polite" className={status?.tone === 'error' ? 'error' : 'ok'}>
            {status?.text ?? ''}
          </p>
        ) : null}
      </section>
    </div>
  );
}
