-- D13: where a maintenance pass that works through something large in slices (the orphan
-- sweep's listing of the object store) stopped, so the next run goes on from there.
CREATE TABLE maintenance_cursors (
  name       text PRIMARY KEY,
  position   text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
