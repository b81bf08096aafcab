-- V9: engines and languages are chosen by people, per item and per collection. A job takes its
-- provider, model and language from its request, else from its item, else from the nearest
-- collection up the item's tree that names one (db/items.ts `inheritedEngineChoice`).
-- `items.language` (0016) already exists: it is both the item's search language and the
-- language its jobs inherit.
ALTER TABLE collections
  ADD COLUMN language text CHECK (language IS NULL OR length(language) BETWEEN 1 AND 35),
  ADD COLUMN provider text CHECK (provider IS NULL OR length(provider) BETWEEN 1 AND 64),
  ADD COLUMN model text CHECK (model IS NULL OR length(model) BETWEEN 1 AND 128);
ALTER TABLE items
  ADD COLUMN provider text CHECK (provider IS NULL OR length(provider) BETWEEN 1 AND 64),
  ADD COLUMN model text CHECK (model IS NULL OR length(model) BETWEEN 1 AND 128);
