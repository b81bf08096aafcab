-- F6: a page's review lines carry its item (for the queue and progress by item). A page moved
-- to another item before this release left its lines under the old one; they follow it now,
-- and db/items.ts moves them in the same transaction as the page from here on.
UPDATE page_lines l SET item_id = p.item_id
  FROM pages p
 WHERE l.page_id = p.id AND l.item_id <> p.item_id;

-- F6: the page mover offers the workspace's most recently changed items first.
CREATE INDEX items_recent ON items (workspace_id, updated_at DESC) WHERE deleted_at IS NULL;
