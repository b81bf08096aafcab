-- D11: the keys between the webhook tables, over (id, time) now that all three are partitioned
-- (0101). Their own transaction, because adding them checks every existing row: ADD FOREIGN
-- KEY takes SHARE ROW EXCLUSIVE, which readers pass (writers wait), where inside 0101 the check
-- would have run under that migration's ACCESS EXCLUSIVE locks and held readers too.
ALTER TABLE webhook_deliveries
  ADD CONSTRAINT webhook_deliveries_event_fkey FOREIGN KEY (event_id, event_created_at)
    REFERENCES event_outbox (id, created_at);
ALTER TABLE webhook_delivery_attempts
  ADD CONSTRAINT webhook_delivery_attempts_delivery_fkey FOREIGN KEY (delivery_id, event_created_at)
    REFERENCES webhook_deliveries (id, event_created_at) ON DELETE CASCADE;
