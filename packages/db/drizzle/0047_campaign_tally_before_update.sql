-- Issue 43: a campaign message's status update cost 1.05x its bare statement with the tally's AFTER
-- row trigger: Postgres queues each AFTER row event and, at the statement's end, fetches the row's
-- old and new versions again to run it. A BEFORE row trigger runs on the row it already holds
-- (locked, rechecked under concurrent updates; the update skipped, the trigger is not called), and
-- its append rolls back with the update if anything later fails. Same condition, same append.
CREATE OR REPLACE FUNCTION dispatch_campaign_tally() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO campaign_tally_moves (campaign_id, from_status, from_error_code, from_billable, from_category,
    status, error_code, billable, category, n)
  SELECT NEW.batch_id, OLD.status,
    CASE WHEN OLD.status IN ('failed', 'expired') THEN coalesce(OLD.last_error_code, '') ELSE '' END,
    coalesce(OLD.pricing_billable, false),
    CASE WHEN OLD.pricing_billable THEN coalesce(OLD.pricing_category, 'unknown') ELSE '' END,
    NEW.status,
    CASE WHEN NEW.status IN ('failed', 'expired') THEN coalesce(NEW.last_error_code, '') ELSE '' END,
    coalesce(NEW.pricing_billable, false),
    CASE WHEN NEW.pricing_billable THEN coalesce(NEW.pricing_category, 'unknown') ELSE '' END,
    1
  WHERE EXISTS (SELECT 1 FROM campaigns c WHERE c.id = NEW.batch_id AND c.api_key_id = NEW.api_key_id);
  RETURN NEW;
END $$;
--> statement-breakpoint
DROP TRIGGER campaign_tally_update ON messages;
--> statement-breakpoint
CREATE TRIGGER campaign_tally_update BEFORE UPDATE ON messages FOR EACH ROW
  WHEN (NEW.batch_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status
    OR OLD.last_error_code IS DISTINCT FROM NEW.last_error_code
    OR OLD.pricing_billable IS DISTINCT FROM NEW.pricing_billable
    OR OLD.pricing_category IS DISTINCT FROM NEW.pricing_category))
  EXECUTE FUNCTION dispatch_campaign_tally();
