import { liveTopics, openConsoleLive } from '@quire/web/lib/consoleLive';
import { withSession } from '@quire/web/lib/session';
import { streamCredentialOf } from '@quire/web/lib/streamCredential';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /console-api/live?topics=jobs,providers: the console's change stream (session only),
 * bounded per signed-in key; see web/lib/consoleLive.ts.
 */
export async function GET(request: Request) {
  return withSession(request, async (principal) =>
    openConsoleLive({
      principal,
      credential: streamCredentialOf(request, principal),
      topics: liveTopics(new URL(request.url).searchParams.get('topics')),
      signal: request.signal,
    }),
  );
}
