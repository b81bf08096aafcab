-- D11: deliveries and their attempts are partitioned by their event's time (0101). The column
-- is added here, in a transaction of its own, because ADD COLUMN takes ACCESS EXCLUSIVE: alone
-- it holds it for an instant (a nullable column without a default rewrites nothing), where
-- inside 0101 it would keep readers out until that migration's backfill and index builds end.
ALTER TABLE webhook_deliveries ADD COLUMN event_created_at timestamptz;
ALTER TABLE webhook_delivery_attempts ADD COLUMN event_created_at timestamptz;
