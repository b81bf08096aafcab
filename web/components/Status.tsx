/** A job or attempt status as a labelled badge; colour is never the only signal. */
export function Status({ value, detail }: { value: string; detail?: string | null }) {
  return (
    <span className={`badge badge-${value}`} data-status={value}>
      {value.replace('_', ' ')}
      {detail ? <span className="badge-detail"> · {detail}</span> : null}
    </span>
  );
}
