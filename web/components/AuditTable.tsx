import type { AuditEntry } from '@quire/db/auditLog';
import { ActorName } from './ActorName';
import { Time } from './Time';

const show = (value: unknown) => (value === null ? '–' : JSON.stringify(value));

/** M4: rows of the audit log, newest first (the operator's view or one workspace's). */
export function AuditTable({ entries, caption }: { entries: AuditEntry[]; caption: string }) {
  if (entries.length === 0) return <p className="muted">Nothing recorded yet.</p>;
  return (
    // Wide before/after values scroll: the region takes focus so a keyboard can scroll it.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable
    <section className="table-wrap" aria-label={caption} tabIndex={0}>
      <table data-testid="audit-log">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id} data-action={entry.action} data-target={entry.target}>
              <td data-label="When">
                <Time date={entry.at} />
              </td>
              <td data-label="Actor">
                <ActorName actor={entry.actor} />
              </td>
              <td data-label="Action">
                <code>{entry.action}</code>
              </td>
              <td data-label="Target">{entry.target}</td>
              <td data-label="Before" className="mono small break">
                {show(entry.before)}
              </td>
              <td data-label="After" className="mono small break">
                {show(entry.after)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
