/**
 * The Temporal server's own count of the requests its frontend answered, by operation, read
 * from its Prometheus endpoint (`service_requests`, summed over the other labels). Round trips,
 * not CPU seconds, are what a change to the hot path moves, and they do not vary with the
 * machine's load as CPU figures do.
 */
export async function temporalRequests(metricsUrl: string): Promise<Record<string, number>> {
  const response = await fetch(metricsUrl);
  if (!response.ok) throw new Error(`${metricsUrl} answered ${response.status}`);
  return frontendRequests(await response.text());
}

/** `service_requests` of the frontend service by operation, from a Prometheus text page. */
export function frontendRequests(page: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of page.split('\n')) {
    if (!line.startsWith('service_requests{')) continue;
    const labels = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
    if (!/(^|,)service_name="frontend"/.test(labels)) continue;
    const operation = /(^|,)operation="([^"]+)"/.exec(labels)?.[2];
    const value = Number(line.slice(line.lastIndexOf('}') + 1).trim());
    if (!operation || !Number.isFinite(value)) continue;
    counts[operation] = (counts[operation] ?? 0) + value;
  }
  return counts;
}

/** Requests of each operation between two counts, per page, the operations that moved only. */
export function requestsPerPage(
  before: Record<string, number>,
  after: Record<string, number>,
  pages: number,
): Record<string, number> {
  const perPage: Record<string, number> = {};
  for (const [operation, count] of Object.entries(after)) {
    const delta = count - (before[operation] ?? 0);
    if (delta > 0) perPage[operation] = Math.round((delta / pages) * 100) / 100;
  }
  return perPage;
}
