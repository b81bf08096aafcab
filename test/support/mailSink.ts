import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MailSink, startMailSink } from '../../scripts/lib/mailSink';
import { freePort } from '../../scripts/lib/temporal';

/** R9: Mailpit on free ports with a mailbox of its own, for a test file that reads its mail. */
export async function startTestMailSink(): Promise<MailSink> {
  return startMailSink({
    smtpPort: await freePort(),
    httpPort: await freePort(),
    dir: mkdtempSync(join(tmpdir(), 'quire-mail-')),
  });
}
