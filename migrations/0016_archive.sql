-- SPEC §20 (F1-F3): the archive as people see it. Collections that nest, items with a title,
-- descriptive metadata and a language, and a full-text index that matches in that language.

-- F1: a collection (fonds, series, box, project). Its parent is in the same workspace (the
-- composite key makes a cross-workspace parent impossible); cycles are refused by the one
-- writer that moves a collection (db/collections.ts), which locks the workspace's tree first.
CREATE TABLE collections (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  parent_id     bigint,
  title         text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
  description   text CHECK (description IS NULL OR length(description) <= 10000),
  -- Label/value pairs, in order: [{"label": "Creator", "value": "..."}].
  metadata      jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(metadata) = 'array'),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, id),
  FOREIGN KEY (workspace_id, parent_id) REFERENCES collections (workspace_id, id),
  CHECK (parent_id IS NULL OR parent_id <> id)
);
CREATE INDEX collections_children ON collections (workspace_id, parent_id, id);

-- F2: an item sits in at most one collection (none: the workspace's root). Its descriptive
-- metadata is kept apart from `metadata`, the integrator's correlation object that events
-- carry (E2). `search_config` is the text-search configuration its language calls for.
ALTER TABLE items
  ADD COLUMN collection_id bigint,
  ADD COLUMN descriptive_metadata jsonb NOT NULL DEFAULT '[]'::jsonb
    CHECK (jsonb_typeof(descriptive_metadata) = 'array'),
  ADD COLUMN language text CHECK (language IS NULL OR length(language) BETWEEN 1 AND 35),
  ADD COLUMN search_config regconfig NOT NULL DEFAULT 'simple',
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
  -- A deleted item (a tombstone) may still name a collection; deleting that (otherwise empty)
  -- collection lets it go to the root.
  ADD FOREIGN KEY (workspace_id, collection_id) REFERENCES collections (workspace_id, id)
    ON DELETE SET NULL (collection_id);
CREATE INDEX items_collection ON items (workspace_id, collection_id, id) WHERE deleted_at IS NULL;
-- F2/F4: an item's pages and transcribed pages, counted from the index alone.
CREATE INDEX pages_item_progress ON pages (workspace_id, item_id) INCLUDE (revision)
  WHERE deleted_at IS NULL;

-- F3: each page is indexed in its item's configuration (copied onto the page, so the
-- generated column needs no join); searches OR one GIN probe per configuration in use.
-- Angle brackets are read as spaces: PostgreSQL's parser would take `<word>` in a
-- transcription (an editor's mark) for an XML tag and drop the word.
DROP INDEX pages_search;
ALTER TABLE pages DROP COLUMN search_tsv;
ALTER TABLE pages
  ADD COLUMN search_config regconfig NOT NULL DEFAULT 'simple',
  ADD COLUMN search_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector(search_config, translate(search_text, '<>', '  '))) STORED;
CREATE INDEX pages_search ON pages USING gin (search_tsv);
