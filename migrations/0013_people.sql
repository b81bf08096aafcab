-- R1-R5: people. Accounts of the installation, their memberships of workspaces with a role,
-- invitations by one-time link, named and scoped API keys attributed to their creator,
-- server-side sessions, sign-in attempts for rate limiting, and the actor of every change.

-- R1: an account is a person of the installation. A local account has an argon2id password
-- hash; an account made by single sign-on has the provider's issuer and subject instead (or
-- both). `operator` makes it an operator of the installation (M1), not a member of anything.
CREATE TABLE accounts (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email          text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
  name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  password_hash  text CHECK (password_hash IS NULL OR password_hash LIKE '$argon2id$%'),
  oidc_issuer    text,
  oidc_subject   text,
  operator       boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now(),
  disabled_at    timestamptz,
  CHECK ((oidc_issuer IS NULL) = (oidc_subject IS NULL))
);
CREATE UNIQUE INDEX accounts_email ON accounts (email);
CREATE UNIQUE INDEX accounts_oidc ON accounts (oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL;

-- R1: who belongs to a workspace, and as what. The roles' powers are core/roles.ts.
CREATE TABLE workspace_members (
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  account_id    bigint NOT NULL REFERENCES accounts(id),
  role          text NOT NULL CHECK (role IN ('owner', 'editor', 'reviewer', 'viewer')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, account_id)
);
CREATE INDEX workspace_members_account ON workspace_members (account_id);

-- R1, R2: an owner invites by a one-time link. Only the SHA-256 of the link's token is kept;
-- it expires, and accepting it is single use (`accepted_at` set in the same transaction that
-- adds the member).
CREATE TABLE invitations (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  email         text NOT NULL CHECK (email = lower(email)),
  role          text NOT NULL CHECK (role IN ('owner', 'editor', 'reviewer', 'viewer')),
  token_hash    bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
  created_by    bigint REFERENCES accounts(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  accepted_at   timestamptz,
  accepted_by   bigint REFERENCES accounts(id),
  revoked_at    timestamptz,
  CHECK ((accepted_at IS NULL) = (accepted_by IS NULL))
);
CREATE INDEX invitations_workspace ON invitations (workspace_id, id DESC);

-- R1: keys are named and scoped, and say who made them (null: the admin CLI or `npm start`).
-- Every key made before this migration could do everything, so it stays `write`.
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write'));
ALTER TABLE api_keys ADD COLUMN created_by bigint REFERENCES accounts(id);
ALTER TABLE api_keys ADD COLUMN revoked_by bigint REFERENCES accounts(id);

-- R3: server-side sessions. The cookie holds a random id; only its SHA-256 is kept. A session
-- is an account's (in one workspace, or the operator view when workspace_id is null), or a
-- key's (the console entered with an API key or an operator key, as before accounts). Every
-- replica reads this table on every request, so ending a session ends it everywhere at once.
CREATE TABLE sessions (
  id_hash          bytea PRIMARY KEY CHECK (length(id_hash) = 32),
  account_id       bigint REFERENCES accounts(id),
  api_key_id       bigint REFERENCES api_keys(id),
  operator_key_id  bigint REFERENCES operator_keys(id),
  workspace_id     bigint REFERENCES workspaces(id),
  created_at       timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  -- The absolute lifetime's end, fixed at sign-in; the idle lifetime is counted from last_seen_at.
  expires_at       timestamptz NOT NULL,
  CHECK (num_nonnulls(account_id, api_key_id, operator_key_id) = 1),
  CHECK (api_key_id IS NULL OR workspace_id IS NOT NULL),
  CHECK (operator_key_id IS NULL OR workspace_id IS NULL)
);
CREATE INDEX sessions_account ON sessions (account_id) WHERE account_id IS NOT NULL;
CREATE INDEX sessions_api_key ON sessions (api_key_id) WHERE api_key_id IS NOT NULL;
CREATE INDEX sessions_expiry ON sessions (expires_at);

-- R2: failed sign-ins, counted per account (email) and per address over a window, shared by
-- every replica. Old rows are removed by the sign-in path itself.
CREATE TABLE sign_in_failures (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email    text NOT NULL,
  address  text NOT NULL,
  at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_email ON sign_in_failures (email, at);
CREATE INDEX sign_in_failures_address ON sign_in_failures (address, at);

-- R5: a change names a person. `account` rows carry the account; key rows keep their key id;
-- every row made from now on carries the actor's name as it was at the time.
ALTER TABLE audit_log ADD COLUMN actor_account_id bigint REFERENCES accounts(id);
ALTER TABLE audit_log ADD COLUMN actor_name text;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check
  CHECK (actor_kind IN ('operator', 'workspace', 'cli', 'account'));
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_check CHECK (
  CASE actor_kind
    WHEN 'cli' THEN actor_key_id IS NULL AND actor_account_id IS NULL
    WHEN 'account' THEN actor_key_id IS NULL AND actor_account_id IS NOT NULL
    ELSE actor_key_id IS NOT NULL AND actor_account_id IS NULL
  END);
