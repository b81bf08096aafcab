import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

/**
 * R9: one message through the installation's mail server, over SMTP (RFC 5321): `smtp://` in
 * the clear (a relay on the private network, the development sink), `smtps://` over TLS;
 * `user:password@` in the URL signs in with AUTH PLAIN. One connection per message: mail is
 * rare (invitations, resets, notices), so nothing is pooled.
 */
export interface MailMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
}

/** A reply of the server: its code and its (joined) text. */
interface Reply {
  code: number;
  text: string;
}

function replies(socket: Socket): () => Promise<Reply> {
  let buffer = '';
  const waiting: Array<(reply: Reply) => void> = [];
  const ready: Reply[] = [];
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure = error;
    for (const w of waiting.splice(0)) w({ code: 0, text: error.message });
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    // A reply ends with a line whose code is followed by a space (RFC 5321 4.2.1).
    for (
      let match = /^(\d{3}) .*\r\n/m.exec(buffer);
      match;
      match = /^(\d{3}) .*\r\n/m.exec(buffer)
    ) {
      const end = match.index + match[0].length;
      const reply = { code: Number(match[1]), text: buffer.slice(0, end).trim() };
      buffer = buffer.slice(end);
      const next = waiting.shift();
      if (next) next(reply);
      else ready.push(reply);
    }
  });
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('the mail server closed the connection')));
  return () =>
    new Promise((resolve) => {
      const first = ready.shift();
      if (first) resolve(first);
      else if (failure) resolve({ code: 0, text: failure.message });
      else waiting.push(resolve);
    });
}

/** A header value on one line (no CR or LF can start a header of its own). */
const headerText = (value: string) => value.replace(/[\r\n]+/g, ' ');

export async function sendMail(serverUrl: string, message: MailMessage): Promise<void> {
  const url = new URL(serverUrl);
  const secure = url.protocol === 'smtps:';
  const port = Number(url.port) || (secure ? 465 : 25);
  const socket: Socket = secure
    ? connectTls({ host: url.hostname, port, servername: url.hostname })
    : connectTcp({ host: url.hostname, port });
  socket.setTimeout(30_000, () => socket.destroy(new Error('the mail server did not answer')));
  const next = replies(socket);
  const expect = async (command: string | null, code: number) => {
    if (command !== null) socket.write(`${command}\r\n`);
    const reply = await next();
    if (Math.floor(reply.code / 100) !== Math.floor(code / 100)) {
      // The server's own words, never the message or the credentials.
      throw new Error(`the mail server refused (${reply.code || 'no reply'})`);
    }
  };
  try {
    await expect(null, 220);
    await expect('EHLO quire', 250);
    if (url.username) {
      const plain = `\0${decodeURIComponent(url.username)}\0${decodeURIComponent(url.password)}`;
      await expect(`AUTH PLAIN ${Buffer.from(plain, 'utf8').toString('base64')}`, 235);
    }
    await expect(`MAIL FROM:<${headerText(message.from)}>`, 250);
    await expect(`RCPT TO:<${headerText(message.to)}>`, 250);
    await expect('DATA', 354);
    const body = [
      `From: ${headerText(message.from)}`,
      `To: ${headerText(message.to)}`,
      `Subject: ${headerText(message.subject)}`,
      `Date: ${new Date().toUTCString()}`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      // Lines that start with a dot are doubled (RFC 5321 4.5.2); line ends are CRLF.
      ...message.text.split(/\r?\n/).map((line) => (line.startsWith('.') ? `.${line}` : line)),
      '.',
    ].join('\r\n');
    await expect(body, 250);
    socket.write('QUIT\r\n');
  } finally {
    socket.end();
  }
}
