/** Display helpers shared by server and client components (no I/O). */

/** "12 s ago", "5 min ago", "3 h ago", "2 d ago"; future times read "in …". */
export function relativeTime(date: Date, now: number = Date.now()): string {
  const delta = Math.round((now - date.getTime()) / 1000);
  const seconds = Math.abs(delta);
  let text: string;
  if (seconds < 5) return 'just now';
  if (seconds < 60) text = `${seconds} s`;
  else if (seconds < 3600) text = `${Math.round(seconds / 60)} min`;
  else if (seconds < 86_400) text = `${Math.round(seconds / 3600)} h`;
  else text = `${Math.round(seconds / 86_400)} d`;
  return delta >= 0 ? `${text} ago` : `in ${text}`;
}

/** The exact time shown on hover: ISO-like, UTC, to the second. */
export function exactTime(date: Date): string {
  return `${date.toISOString().replace('T', ' ').slice(0, 19)} UTC`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

/** Micro-dollars as money: 1_234_567 → "$1.23". */
export function formatMicros(micros: number): string {
  const dollars = micros / 1_000_000;
  return `$${dollars < 10 ? dollars.toFixed(dollars < 0.01 && dollars > 0 ? 4 : 2) : dollars.toFixed(2)}`;
}

export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

export function formatSeconds(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s.toFixed(1).padStart(4, '0')}`;
}
