import { exactTime, relativeTime } from './format';

/** A time shown relative ("3 min ago") with the exact time on hover and to assistive tech. */
export function Time({ date, prefix }: { date: Date | null | undefined; prefix?: string }) {
  if (!date) return <span className="muted">–</span>;
  const exact = exactTime(date);
  return (
    <time dateTime={date.toISOString()} title={exact}>
      {prefix}
      {relativeTime(date)}
    </time>
  );
}
