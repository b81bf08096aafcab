/**
 * V3, C2: how many lines people edited or verified a job's commit kept as they were (the
 * API's `keptHumanLines`), as the job page and the page view say it.
 */
export function KeptLines({ count }: { count: number }) {
  return (
    <span data-kept-lines={count}>
      {count === 0
        ? 'no human lines kept'
        : `${count} human ${count === 1 ? 'line' : 'lines'} kept`}
    </span>
  );
}
