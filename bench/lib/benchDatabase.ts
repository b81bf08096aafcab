/**
 * What the benchmarks that make their own database share: the server they make it on
 * (QUIRE_BENCH_ADMIN_URL, local PostgreSQL with trust by default), a database's URL on it,
 * and a positive whole-number flag from the command line (`--runs 3`).
 */
export const ADMIN_URL =
  process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The URL of database `name` on the admin URL's server. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** `--name N` from the command line, `fallback` without it; anything but N >= 1 is refused. */
export function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive integer`);
  return value;
}
