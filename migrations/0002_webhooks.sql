-- W1/W2 and the relay's durable cursor.

-- A subscription receives events committed after it was created: the outbox high-water mark
-- at creation is recorded, and fan-out only considers later ids.
ALTER TABLE webhook_subscriptions ADD COLUMN after_event_id bigint NOT NULL DEFAULT 0;
CREATE INDEX webhook_subscriptions_active ON webhook_subscriptions (workspace_id) WHERE disabled_at IS NULL;

-- The retry schedule counts from here; an admin replay moves it to the replay time, so a
-- replayed delivery gets a whole schedule again. Attempt rows keep the full history.
ALTER TABLE webhook_deliveries ADD COLUMN retry_origin_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, id DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_delivery_attempts_delivery ON webhook_delivery_attempts (delivery_id, id);

-- The fan-out cursor: the last outbox id turned into deliveries. Advanced in the transaction
-- that inserts those deliveries, so a crash never skips or half-applies a batch.
CREATE TABLE relay_cursors (
  name          text PRIMARY KEY,
  last_event_id bigint NOT NULL DEFAULT 0 CHECK (last_event_id >= 0),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
