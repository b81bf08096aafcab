'use client';
import type { LineState } from '@quire/core/annotation';
import type { ReviewLine } from '@quire/db/review';
import {
  restoreLineAction,
  type SaveResult,
  savePageAction,
  verifyLinesAction,
} from '@quire/web/app/pages/actions';
import { loadReviewPageAction } from '@quire/web/app/review/actions';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useCallback, useEffect, useLayoutEffect, useRef, useState, useTransition } from 'react';
import { formatSeconds } from './format';
import { LineCrop } from './LineCrop';
import { STATE_LABEL } from './PageWorkspace';
import { pageImageService } from './pageImage';

interface Props {
  /** The workspace whose Image API draws the lines' crops (V7). */
  workspaceId: number;
  itemId: string | null;
  initial: { lines: ReviewLine[]; nextPageToken: string | null };
  /** R8: the role may edit and verify (core/roles.ts `page.edit`); else the queue is read only. */
  mayEdit: boolean;
}

/** A line as the view holds it: what the queue gave, and what was done to it here. */
type Held = ReviewLine & { key: string };

/** One step the reviewer can undo: the line, the revision it was read from, and the one made. */
interface Step {
  key: string;
  before: { revision: number; text: string; state: LineState };
  after: number;
}

type Conflict = { key: string; revision: number; theirs: string; by: string | null };

const keyOf = (l: ReviewLine) => `${l.pageId}:${l.index}`;

/** How long the reviewer pauses before the rest of the view (the progress) is refreshed. */
const REFRESH_AFTER_IDLE_MS = 1500;

/**
 * V2: the review view's working area. One line at a time, its crop of the scan (or its span of
 * the recording) above its text, worked from the keyboard alone: ↓/j next, ↑/k previous,
 * v verify, e or Enter edit (Enter saves, Escape leaves the edit), u undo, p play the span.
 * Each line is saved as it goes, from the page revision it was read from (V4 merges it with
 * whatever else changed on the page since); a line someone changed meanwhile shows their text.
 */
export function ReviewQueue({ workspaceId, itemId, initial, mayEdit }: Props) {
  const [lines, setLines] = useState<Held[]>(() =>
    initial.lines.map((l) => ({ ...l, key: keyOf(l) })),
  );
  const [nextToken, setNextToken] = useState(initial.nextPageToken);
  const [position, setPosition] = useState(0);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  const [history, setHistory] = useState<Step[]>([]);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const [status, setStatus] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const [pending, startTransition] = useTransition();
  const input = useRef<HTMLInputElement>(null);
  const audio = useRef<HTMLAudioElement>(null);
  const current = lines[position];
  const router = useRouter();
  const idle = useRef<ReturnType<typeof setTimeout> | null>(null);
  // V2: saves answer without re-rendering the view; the progress above the queue follows once
  // the reviewer pauses.
  const refreshWhenIdle = () => {
    if (idle.current) clearTimeout(idle.current);
    idle.current = setTimeout(() => router.refresh(), REFRESH_AFTER_IDLE_MS);
  };
  useEffect(
    () => () => {
      if (idle.current) clearTimeout(idle.current);
    },
    [],
  );

  const update = (key: string, change: Partial<Held>) =>
    setLines((all) => all.map((l) => (l.key === key ? { ...l, ...change } : l)));

  const move = useCallback(
    (by: number) => {
      setEditing(false);
      setConflict(null);
      setPosition((p) => Math.min(Math.max(0, p + by), Math.max(0, lines.length - 1)));
      // Near the end of what is loaded: the next page of the queue.
      if (nextToken && position + by >= lines.length - 5 && !pending) {
        const token = nextToken;
        setNextToken(null);
        startTransition(async () => {
          const page = await loadReviewPageAction({ itemId, pageToken: token });
          if ('error' in page) {
            setStatus({ tone: 'error', text: page.error });
            return;
          }
          setLines((all) => {
            const seen = new Set(all.map((l) => l.key));
            return [
              ...all,
              ...page.lines
                .filter((l) => !seen.has(keyOf(l)))
                .map((l) => ({ ...l, key: keyOf(l) })),
            ];
          });
          setNextToken(page.nextPageToken);
        });
      }
    },
    [itemId, lines.length, nextToken, pending, position],
  );

  /** The answer to a save of `line`: the new revision, or the other text to choose from. */
  const settle = (
    line: Held,
    result: SaveResult,
    done: { text: string; state: LineState },
    undoable: boolean,
  ): boolean => {
    if (result.state === 'committed') {
      refreshWhenIdle();
      if (undoable) {
        setHistory((h) => [
          ...h,
          {
            key: line.key,
            before: { revision: line.revision, text: line.text, state: line.state },
            after: result.revision,
          },
        ]);
      }
      update(line.key, { ...done, revision: result.revision });
      return true;
    }
    if (result.state === 'lineConflict') {
      const other = result.conflicts.find((c) => c.index === line.index);
      setConflict({
        key: line.key,
        revision: result.revision,
        theirs: other?.theirs?.text ?? '',
        by: other?.theirs?.byName ?? null,
      });
      setStatus({
        tone: 'error',
        text: `Line ${line.index + 1} was changed by someone else since revision ${line.revision}. Nothing was overwritten: keep yours or take theirs.`,
      });
      return false;
    }
    setStatus({
      tone: 'error',
      text: result.state === 'conflict' ? 'The page changed; reload the queue.' : result.message,
    });
    return false;
  };

  const verify = () => {
    const line = current;
    if (!line || pending) return;
    startTransition(async () => {
      const result = await verifyLinesAction({
        pageId: line.pageId,
        expectedRevision: line.revision,
        lines: [line.index],
        refresh: false,
      });
      if (settle(line, result, { text: line.text, state: 'verified' }, true)) {
        setStatus({ tone: 'ok', text: `Line ${line.index + 1} of page ${line.pageId} verified.` });
        move(1);
      }
    });
  };

  const saveEdit = (from = current?.revision) => {
    const line = current;
    if (!line || pending || from === undefined) return;
    const text = draft.replace(/\r?\n/g, ' ');
    startTransition(async () => {
      const result = await savePageAction({
        pageId: line.pageId,
        expectedRevision: from,
        edits: [{ index: line.index, text }],
        refresh: false,
      });
      if (settle({ ...line, revision: from }, result, { text, state: 'edited' }, true)) {
        setConflict(null);
        setEditing(false);
        setStatus({ tone: 'ok', text: `Line ${line.index + 1} of page ${line.pageId} saved.` });
        move(1);
      }
    });
  };

  const takeTheirs = () => {
    if (!conflict || !current) return;
    update(current.key, { text: conflict.theirs, revision: conflict.revision, state: 'edited' });
    setDraft(conflict.theirs);
    setConflict(null);
    setEditing(false);
    setStatus({ tone: 'ok', text: `Line ${current.index + 1}: their text kept.` });
  };

  const undo = () => {
    const step = history[history.length - 1];
    if (!step || pending) return;
    const at = lines.findIndex((l) => l.key === step.key);
    const line = lines[at];
    if (!line) return;
    startTransition(async () => {
      const result = await restoreLineAction({
        pageId: line.pageId,
        expectedRevision: step.after,
        index: line.index,
        revision: step.before.revision,
        refresh: false,
      });
      if (settle(line, result, { text: step.before.text, state: step.before.state }, false)) {
        setHistory((h) => h.slice(0, -1));
        setPosition(at);
        setEditing(false);
        setStatus({ tone: 'ok', text: `Undone: line ${line.index + 1} of page ${line.pageId}.` });
      }
    });
  };

  const play = () => {
    const el = audio.current;
    if (!el || !current || current.target?.kind !== 't') return;
    const { start, end } = current.target;
    el.currentTime = start;
    const stop = () => {
      if (el.currentTime >= end) {
        el.pause();
        el.removeEventListener('timeupdate', stop);
      }
    };
    el.addEventListener('timeupdate', stop);
    void el.play().catch(() => {});
  };

  const startEdit = () => {
    if (!current) return;
    setDraft(current.text);
    setEditing(true);
  };

  useEffect(() => {
    if (editing) input.current?.focus();
  }, [editing]);

  // The keyboard is the main way through the queue; keys typed into the line's input are its own.
  // The handler of the latest render is installed as that render commits (a layout effect), so a
  // key pressed the moment the view shows "not busy" is read against that same state: a passive
  // effect can run after the browser has already dispatched the key to the previous handler.
  const onKey = useRef<(event: KeyboardEvent) => void>(() => {});
  useLayoutEffect(() => {
    onKey.current = (event: KeyboardEvent) => {
      if (editing || event.altKey || event.ctrlKey || event.metaKey) return;
      const target = event.target as HTMLElement | null;
      if (target && ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName)) return;
      if (target?.tagName === 'BUTTON' && event.key === 'Enter') return;
      const actions = new Map<string, () => void>([
        ['ArrowDown', () => move(1)],
        ['j', () => move(1)],
        ['ArrowUp', () => move(-1)],
        ['k', () => move(-1)],
        ['p', play],
        ...(mayEdit
          ? ([
              ['v', verify],
              ['e', startEdit],
              ['Enter', startEdit],
              ['u', undo],
            ] as const)
          : []),
      ]);
      const action = actions.get(event.key);
      if (!action) return;
      event.preventDefault();
      action();
    };
  });
  useEffect(() => {
    const listener = (event: KeyboardEvent) => onKey.current(event);
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);

  if (lines.length === 0) {
    return (
      <p className="empty card muted">
        Nothing to review: every line here is verified, or nothing has been read yet.
      </p>
    );
  }

  return (
    <div className="review" data-testid="review" aria-busy={pending}>
      {mayEdit ? (
        <p className="muted small" id="review-keys" data-act="page.edit">
          Keys: <kbd>↓</kbd> or <kbd>j</kbd> next, <kbd>↑</kbd> or <kbd>k</kbd> previous,{' '}
          <kbd>v</kbd> verify, <kbd>e</kbd> or <kbd>Enter</kbd> edit (<kbd>Enter</kbd> saves,{' '}
          <kbd>Esc</kbd> cancels), <kbd>u</kbd> undo
          {current?.kind === 'audio' ? ', p play the span' : ''}.
        </p>
      ) : (
        <p className="muted small" id="review-keys">
          Keys: <kbd>↓</kbd> or <kbd>j</kbd> next, <kbd>↑</kbd> or <kbd>k</kbd> previous
          {current?.kind === 'audio' ? ', p play the span' : ''}. Your role reads lines; it does not
          edit them.
        </p>
      )}
      {current ? (
        <section
          className="review-line card"
          aria-labelledby="review-line-heading"
          data-page={current.pageId}
          data-line={current.index}
        >
          <h2 id="review-line-heading">
            Line {current.index + 1} of{' '}
            <Link href={`/pages/${current.pageId}`}>page {current.pageId}</Link>{' '}
            <span className="muted small">
              {position + 1} of {lines.length}
              {nextToken ? '+' : ''} ·{' '}
              {current.confidence === null
                ? 'no confidence'
                : `confidence ${current.confidence.toFixed(2)}`}{' '}
              ·{' '}
              <span className={`line-state state-${current.state}`} data-testid="review-state">
                {STATE_LABEL[current.state]}
              </span>
            </span>
          </h2>
          <LineMedia workspaceId={workspaceId} line={current} audio={audio} onPlay={play} />
          {editing ? (
            <label className="review-edit">
              <span className="sr-only">Text of line {current.index + 1}</span>
              <input
                ref={input}
                value={draft}
                aria-describedby="review-keys"
                onChange={(e) => setDraft(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter') {
                    e.preventDefault();
                    saveEdit();
                  } else if (e.key === 'Escape') {
                    e.preventDefault();
                    setEditing(false);
                  }
                }}
              />
            </label>
          ) : (
            <p className="review-text" data-testid="review-text">
              {current.text || <span className="muted">(empty)</span>}
            </p>
          )}
          {conflict && conflict.key === current.key ? (
            <div className="conflict" data-testid="review-conflict">
              <p>
                Their text{conflict.by ? ` (by ${conflict.by})` : ''}:{' '}
                <span className="choice-text">{conflict.theirs}</span>
              </p>
              <div className="actions">
                <button
                  type="button"
                  onClick={() => saveEdit(conflict.revision)}
                  disabled={pending}
                >
                  Keep mine
                </button>
                <button type="button" className="secondary" onClick={takeTheirs}>
                  Take theirs
                </button>
              </div>
            </div>
          ) : null}
        </section>
      ) : null}
      <p role="status" aria-live="polite" className={status?.tone === 'error' ? 'error' : 'ok'}>
        {status?.text ?? ''}
      </p>
      <ol className="review-list" aria-label="Lines in this queue">
        {lines.map((l, i) => (
          <li key={l.key} aria-current={i === position ? 'true' : undefined}>
            <span className="line-no">
              p{l.pageId} · {l.index + 1}
            </span>{' '}
            <span className="line-text">{l.text || '(empty)'}</span>{' '}
            <span className={`line-state state-${l.state}`}>{STATE_LABEL[l.state]}</span>
          </li>
        ))}
      </ol>
    </div>
  );
}

/** V7: the line's crop of the scan (exactly its box, from the Image API), or its span. */
function LineMedia({
  workspaceId,
  line,
  audio,
  onPlay,
}: {
  workspaceId: number;
  line: Held;
  audio: React.RefObject<HTMLAudioElement | null>;
  onPlay: () => void;
}) {
  if (line.target?.kind === 'xywh') {
    return (
      <LineCrop
        service={pageImageService(workspaceId, line.pageId)}
        box={line.target.box}
        page={line.width && line.height ? { width: line.width, height: line.height } : null}
        alt={`Line ${line.index + 1} of page ${line.pageId} as scanned`}
      />
    );
  }
  if (line.target?.kind === 't') {
    return (
      <div className="player">
        {/* biome-ignore lint/a11y/useMediaCaption: the line's text below is its caption */}
        <audio ref={audio} preload="metadata" src={`/console-api/pages/${line.pageId}/media`} />
        <button type="button" className="secondary" onClick={onPlay}>
          Play {formatSeconds(line.target.start)} to {formatSeconds(line.target.end)}
        </button>
      </div>
    );
  }
  return null;
}
