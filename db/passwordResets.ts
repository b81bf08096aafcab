import { createHash, randomBytes } from 'node:crypto';
import { recordAudit } from './auditLog';
import { ClosedLinkError, NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';
import { endSessionsOf, hashSessionId } from './sessions';

/**
 * R9: password resets by a one-time link sent to the account's email. The token is returned
 * once, to be mailed; only its hash is stored. Using it sets the password and ends every
 * session of the account, in one transaction with its audit row.
 */
const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest();

export async function createPasswordReset(
  db: Queryable,
  accountId: number,
  ttlSeconds: number,
): Promise<string> {
  const token = `qr_${randomBytes(32).toString('base64url')}`;
  await db.query(
    `INSERT INTO password_resets (account_id, token_hash, expires_at)
     VALUES ($1, $2, now() + make_interval(secs => $3))`,
    [accountId, hashToken(token), ttlSeconds],
  );
  return token;
}

/** Sets the password the link was sent for; the account's id and email, or `reset_closed`. */
export async function redeemPasswordReset(
  pool: Pool,
  token: string,
  passwordHash: string,
): Promise<{ accountId: number; email: string; endedSessions: number }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `UPDATE password_resets SET used_at = now()
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
        RETURNING account_id`,
      [hashToken(token)],
    );
    if (!rows[0]) throw new ClosedLinkError('reset_closed');
    const accountId = Number(rows[0].account_id);
    const updated = await client.query(
      `UPDATE accounts SET password_hash = $2 WHERE id = $1 AND disabled_at IS NULL
       RETURNING email, name`,
      [accountId, passwordHash],
    );
    if (!updated.rows[0]) throw new ClosedLinkError('reset_closed');
    // Every other link of the account closes with it.
    await client.query(
      'UPDATE password_resets SET used_at = now() WHERE account_id = $1 AND used_at IS NULL',
      [accountId],
    );
    const endedSessions = await endSessionsOf(client, { accountId });
    await recordAudit(
      client,
      { kind: 'account', id: accountId, name: updated.rows[0].name as string },
      {
        action: 'account.password_reset',
        target: `accounts/${accountId}`,
        workspaceId: null,
        before: null,
        after: { endedSessions },
      },
    );
    return { accountId, email: updated.rows[0].email as string, endedSessions };
  });
}

/**
 * R9: a signed-in person changes their own password (the caller checked the current one).
 * Every other session of the account ends and every open reset link closes (a link mailed
 * before the change would undo it); the session they act from stays. One transaction with
 * its audit row.
 */
export async function changeOwnPassword(
  pool: Pool,
  input: { accountId: number; keepSessionId: string; passwordHash: string },
): Promise<{ email: string; endedSessions: number }> {
  return withTransaction(pool, async (client) => {
    const updated = await client.query(
      `UPDATE accounts SET password_hash = $2 WHERE id = $1 AND disabled_at IS NULL
       RETURNING email, name`,
      [input.accountId, input.passwordHash],
    );
    if (!updated.rows[0]) throw new NotFoundError('account_not_found');
    await client.query(
      'UPDATE password_resets SET used_at = now() WHERE account_id = $1 AND used_at IS NULL',
      [input.accountId],
    );
    const ended = await client.query(
      'DELETE FROM sessions WHERE account_id = $1 AND id_hash <> $2',
      [input.accountId, hashSessionId(input.keepSessionId)],
    );
    const endedSessions = ended.rowCount ?? 0;
    await recordAudit(
      client,
      { kind: 'account', id: input.accountId, name: updated.rows[0].name as string },
      {
        action: 'account.password_change',
        target: `accounts/${input.accountId}`,
        workspaceId: null,
        before: null,
        after: { endedSessions },
      },
    );
    return { email: updated.rows[0].email as string, endedSessions };
  });
}
