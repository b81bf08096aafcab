'use client';
import { arrangePagesAction } from '@quire/web/app/items/actions';
import {
  type DragEvent,
  type KeyboardEvent,
  type ReactNode,
  useEffect,
  useId,
  useRef,
  useState,
} from 'react';

export interface OrderedPage {
  pageId: number;
  /** What a person calls the page ("page 3"), for the announcements. */
  label: string;
  content: ReactNode;
}

const FOCUS_KEY = 'quire.movedPage';

/** The order with the page at `from` moved to `to`. */
export function movedOrder(ids: readonly number[], from: number, to: number): number[] {
  const next = [...ids];
  const [page] = next.splice(from, 1);
  next.splice(to, 0, page!);
  return next;
}

/**
 * F6: an item's pages in order, rearranged by drag and drop or from the keyboard (a focused
 * page moves with Alt+Arrow keys, Alt+Home and Alt+End). Each move sends the whole new order
 * once through the item's arrange form (web/app/items/actions.ts, one audited transaction in
 * db/itemPages.ts); the page comes back with every count as it now stands, and the moved page
 * keeps the focus.
 */
export function PageOrder({
  itemId,
  pages,
  mayArrange,
}: {
  itemId: string;
  pages: OrderedPage[];
  mayArrange: boolean;
}) {
  const hintId = useId();
  const form = useRef<HTMLFormElement>(null);
  const order = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLOListElement>(null);
  const [dragged, setDragged] = useState<number | null>(null);
  const [over, setOver] = useState<number | null>(null);
  const [moving, setMoving] = useState<{ pageId: number; to: number } | null>(null);
  const ids = pages.map((p) => p.pageId);
  const key = ids.join(',');

  // The new order has come back from the server: the moved page takes the focus again
  // (kept in the tab's session storage, as the page may be drawn anew).
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the order changes
  useEffect(() => {
    setMoving(null);
    const focusPage = window.sessionStorage.getItem(FOCUS_KEY);
    if (focusPage === null) return;
    window.sessionStorage.removeItem(FOCUS_KEY);
    list.current?.querySelector<HTMLElement>(`li[data-page="${focusPage}"]`)?.focus();
  }, [key]);

  const move = (from: number, to: number) => {
    if (moving || from === to || to < 0 || to >= ids.length) return;
    const pageId = ids[from]!;
    order.current!.value = movedOrder(ids, from, to).join(',');
    setMoving({ pageId, to });
    window.sessionStorage.setItem(FOCUS_KEY, String(pageId));
    form.current!.requestSubmit();
  };

  const onKeyDown = (event: KeyboardEvent<HTMLLIElement>, index: number) => {
    if (!event.altKey || event.target !== event.currentTarget) return;
    const to =
      event.key === 'ArrowUp' || event.key === 'ArrowLeft'
        ? index - 1
        : event.key === 'ArrowDown' || event.key === 'ArrowRight'
          ? index + 1
          : event.key === 'Home'
            ? 0
            : event.key === 'End'
              ? ids.length - 1
              : undefined;
    if (to === undefined) return;
    event.preventDefault();
    move(index, to);
  };

  const movingLabel = moving ? pages.find((p) => p.pageId === moving.pageId)?.label : undefined;
  return (
    <>
      {mayArrange ? (
        <>
          <form ref={form} action={arrangePagesAction} hidden data-act="item.arrange">
            <input type="hidden" name="itemId" value={itemId} />
            <input ref={order} type="hidden" name="order" defaultValue={key} />
          </form>
          <p id={hintId} className="muted small">
            Drag a page to its place, or focus it and press Alt with the arrow keys (Alt+Home,
            Alt+End for first and last).
          </p>
        </>
      ) : null}
      <ol ref={list} className="page-strip" aria-busy={moving ? true : undefined}>
        {pages.map((page, i) => (
          <li
            key={page.pageId}
            data-page={page.pageId}
            className={[
              'card',
              mayArrange ? 'arrangeable' : '',
              dragged === i ? 'dragging' : '',
              over === i && dragged !== null && dragged !== i ? 'drop-target' : '',
            ]
              .filter(Boolean)
              .join(' ')}
            {...(mayArrange
              ? {
                  draggable: true,
                  tabIndex: 0,
                  'aria-describedby': hintId,
                  onKeyDown: (e: KeyboardEvent<HTMLLIElement>) => onKeyDown(e, i),
                  onDragStart: (e: DragEvent<HTMLLIElement>) => {
                    e.dataTransfer.effectAllowed = 'move';
                    e.dataTransfer.setData('text/plain', String(page.pageId));
                    setDragged(i);
                  },
                  onDragOver: (e: DragEvent<HTMLLIElement>) => {
                    if (dragged === null) return;
                    e.preventDefault();
                    e.dataTransfer.dropEffect = 'move';
                    setOver(i);
                  },
                  onDragLeave: () => setOver((current) => (current === i ? null : current)),
                  onDrop: (e: DragEvent<HTMLLIElement>) => {
                    e.preventDefault();
                    const from = dragged;
                    setDragged(null);
                    setOver(null);
                    if (from !== null) move(from, i);
                  },
                  onDragEnd: () => {
                    setDragged(null);
                    setOver(null);
                  },
                }
              : {})}
          >
            {page.content}
          </li>
        ))}
      </ol>
      <p role="status" aria-live="polite" className="sr-only">
        {moving && movingLabel ? `Moving ${movingLabel} to position ${moving.to + 1}…` : ''}
      </p>
    </>
  );
}
