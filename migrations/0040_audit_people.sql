-- R10: the audit page narrows the log to one person (an account or a workspace key), and an
-- upload retried with its idempotency key is recorded once (db/auditLog.ts `recordAudit`
-- with `once`, which looks for the action on its target).
CREATE INDEX audit_log_account ON audit_log (workspace_id, actor_account_id, id DESC)
  WHERE actor_account_id IS NOT NULL;
CREATE INDEX audit_log_key ON audit_log (workspace_id, actor_key_id, id DESC)
  WHERE actor_key_id IS NOT NULL;
CREATE INDEX audit_log_target ON audit_log (target, action);
