import { join } from 'node:path';
import { findOrBuild } from './goBuilds';
import { httpOk, managedProcess, pollReady } from './processes';

/**
 * R9: a real SMTP sink for development and the tests: Mailpit (built from the Go module proxy
 * into the cache, like Hydra), which keeps every message it is sent and shows them through its
 * HTTP API, so a test follows the link a message carries as its reader would.
 */
export interface MailSink {
  /** For QUIRE_SMTP_URL. */
  smtpUrl: string;
  /** Mailpit's web interface and HTTP API. */
  httpUrl: string;
  /** The plain text of the newest message to `to`, waiting up to `timeoutMs` for one. */
  waitForMessage(to: string, match?: RegExp, timeoutMs?: number): Promise<SunkMessage>;
  /** The messages sent to `to` so far (newest first). */
  messagesTo(to: string): Promise<SunkMessage[]>;
  stop(): Promise<void>;
}

export interface SunkMessage {
  subject: string;
  text: string;
}

export async function startMailSink(options: {
  smtpPort: number;
  httpPort: number;
  dir: string;
  log?: (line: string) => void;
}): Promise<MailSink> {
  const mailpit = findOrBuild('mailSink', options.log).mailpit!;
  const httpUrl = `http://127.0.0.1:${options.httpPort}`;
  const server = managedProcess({
    name: 'mailpit',
    command: mailpit,
    args: [
      '--smtp',
      `127.0.0.1:${options.smtpPort}`,
      '--listen',
      `127.0.0.1:${options.httpPort}`,
      '--database',
      join(options.dir, 'mailpit.db'),
      '--disable-version-check',
    ],
    env: { ...process.env },
    logFile: join(options.dir, 'mailpit.log'),
    ready: (exited) => pollReady('mailpit', () => httpOk(`${httpUrl}/readyz`), exited, 60_000),
  });
  await server.start();
  const api = async (path: string) => {
    const response = await fetch(`${httpUrl}/api/v1${path}`);
    if (!response.ok) throw new Error(`mailpit ${path}: ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const messagesTo = async (to: string): Promise<SunkMessage[]> => {
    const list = (await api(`/search?query=${encodeURIComponent(`to:"${to}"`)}`)) as {
      messages?: Array<{ ID: string }>;
    };
    const found: SunkMessage[] = [];
    for (const { ID } of list.messages ?? []) {
      const message = (await api(`/message/${ID}`)) as { Subject: string; Text: string };
      found.push({ subject: message.Subject, text: message.Text });
    }
    return found;
  };
  return {
    smtpUrl: `smtp://127.0.0.1:${options.smtpPort}`,
    httpUrl,
    messagesTo,
    async waitForMessage(to, match = /./, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const message = (await messagesTo(to)).find((m) => match.test(m.subject));
        if (message) return message;
        if (Date.now() > deadline) throw new Error(`no message to ${to} in ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async stop() {
      await server.stop(5_000);
    },
  };
}
