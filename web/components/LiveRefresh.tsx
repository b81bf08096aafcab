'use client';
import { QUIRE_EVENT_TYPES } from '@quire/core/cloudevents';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';

/**
 * Keeps a server-rendered page current without a polling loop in the browser: EventSource
 * streams push, and any relevant message re-renders the page's server components
 * (`router.refresh()`, coalesced). Two sources:
 * - `workspaceId`: the workspace event stream (S1, authorised by the session cookie); events
 *   whose type starts with one of `eventTypes` trigger a refresh.
 * - `topics`: the console's change stream (/console-api/live), which says when any job of the
 *   workspace or any provider's queue state changed (progress has no outbox event).
 */
export function LiveRefresh({
  workspaceId,
  eventTypes = ['dev.quire.'],
  topics = [],
  label = 'Live updates',
  baselines = {},
  quiet = false,
}: {
  /** No visible indicator (the layout's provider watch). */
  quiet?: boolean;
  workspaceId?: number;
  /** The digests the page was rendered at, so a change before the stream opens still counts. */
  baselines?: Partial<Record<'jobs' | 'providers', string>>;
  eventTypes?: string[];
  topics?: Array<'jobs' | 'providers'>;
  label?: string;
}) {
  const router = useRouter();
  const [state, setState] = useState<'connecting' | 'live' | 'reconnecting'>('connecting');
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const topicKey = topics.join(',');
  const baselineRef = useRef(baselines);
  const typeKey = eventTypes.join(',');

  useEffect(() => {
    const refresh = () => {
      if (timer.current) return;
      timer.current = setTimeout(() => {
        timer.current = undefined;
        router.refresh();
      }, 250);
    };
    const sources: EventSource[] = [];
    const opened = new Set<EventSource>();
    const track = (source: EventSource, total: number) => {
      source.onopen = () => {
        opened.add(source);
        if (opened.size === total) setState('live');
      };
      source.onerror = () => {
        opened.delete(source);
        setState('reconnecting');
      };
    };
    const total = (workspaceId ? 1 : 0) + (topicKey ? 1 : 0);
    if (workspaceId) {
      const events = new EventSource(`/api/v1/workspaces/${workspaceId}/events`);
      const prefixes = typeKey.split(',');
      for (const type of QUIRE_EVENT_TYPES) {
        if (prefixes.some((p) => type.startsWith(p))) events.addEventListener(type, refresh);
      }
      track(events, total);
      sources.push(events);
    }
    if (topicKey) {
      const live = new EventSource(`/console-api/live?topics=${encodeURIComponent(topicKey)}`);
      const seen = new Map<string, string>(
        Object.entries(baselineRef.current) as Array<[string, string]>,
      );
      for (const topic of topicKey.split(',')) {
        live.addEventListener(topic, (message) => {
          const digest = (message as MessageEvent<string>).data;
          const before = seen.get(topic);
          seen.set(topic, digest);
          // The first digest is the baseline the page was rendered at (or near).
          if (before !== undefined && before !== digest) refresh();
        });
      }
      track(live, total);
      sources.push(live);
    }
    return () => {
      for (const source of sources) source.close();
      if (timer.current) clearTimeout(timer.current);
      timer.current = undefined;
    };
  }, [router, workspaceId, topicKey, typeKey]);

  if (quiet) return null;
  return (
    <span className={`live live-${state}`} role="status" aria-live="polite" data-live={state}>
      <span className="live-dot" aria-hidden="true" />
      {state === 'live' ? label : state === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
    </span>
  );
}
