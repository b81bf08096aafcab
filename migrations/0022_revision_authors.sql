-- R5 R7 (issue 49, point 2): a revision names who wrote it in typed columns, as the audit log
-- does, instead of the `edited_by` string (`console:account:7`) that every reader parsed back.
-- `author_kind` is core/actor.ts's `Actor` kind: a person's `account` or an `apiKey` for an
-- edit, the `engine` for a reading (its name is `engine`), `import` for an imported file;
-- revision 0, the empty page, has none. `author_id` is the account's or the key's id.
-- `edit_channel` is where a person edited (the API or the console), which the API's
-- `editedBy` has always said.
ALTER TABLE page_revisions ADD COLUMN author_kind text
  CHECK (author_kind IN ('account', 'apiKey', 'engine', 'import'));
ALTER TABLE page_revisions ADD COLUMN author_id bigint;
ALTER TABLE page_revisions ADD COLUMN edit_channel text CHECK (edit_channel IN ('api', 'console'));

-- The strings parsed once, here. Quire only ever wrote `[console:](account|api-key):<id>`;
-- anything else was written by hand and names no account or key, so it keeps no author.
UPDATE page_revisions r
   SET author_kind = CASE m[2] WHEN 'account' THEN 'account' ELSE 'apiKey' END,
       author_id = m[3]::bigint,
       edit_channel = CASE WHEN m[1] IS NULL THEN 'api' ELSE 'console' END
  FROM (SELECT page_id, revision,
               regexp_match(edited_by, '^(console:)?(account|api-key):([0-9]{1,18})$') AS m
          FROM page_revisions WHERE source = 'human') parsed
 WHERE r.page_id = parsed.page_id AND r.revision = parsed.revision AND parsed.m IS NOT NULL;
UPDATE page_revisions SET author_kind = source WHERE source IN ('engine', 'import');

ALTER TABLE page_revisions DROP COLUMN edited_by;

ALTER TABLE page_revisions ADD CONSTRAINT page_revisions_author_check CHECK (
  CASE author_kind
    WHEN 'account' THEN source = 'human' AND author_id IS NOT NULL AND edit_channel IS NOT NULL
    WHEN 'apiKey' THEN source = 'human' AND author_id IS NOT NULL AND edit_channel IS NOT NULL
    WHEN 'engine' THEN source = 'engine' AND author_id IS NULL AND edit_channel IS NULL
    WHEN 'import' THEN source = 'import' AND author_id IS NULL AND edit_channel IS NULL
  END);
ALTER TABLE page_revisions ADD CONSTRAINT page_revisions_authored_check CHECK (
  source = 'human' OR (author_kind IS NULL) = (source = 'initial'));
