-- Issue 43: a campaign's counts without reading its rows or its messages (0.9 s at a million).
-- Its rows' states are counted on the campaign as they change (fed, refused when stored, canceled),
-- and its messages by status in `campaign_tallies`, kept by the triggers below wherever a message of
-- a campaign is inserted, changes what its counts read, or is deleted. Each backend adds to rows of
-- its own (`shard` = its pid), so concurrent writers never wait on one another's row.
-- `feed_token` fences the feeder: raised by each that takes a campaign's lease, checked when a window
-- is assigned and confirmed.
CREATE TABLE "campaign_tallies" (
	"campaign_id" uuid NOT NULL,
	"shard" integer NOT NULL,
	"status" "message_status" NOT NULL,
	"error_code" text NOT NULL,
	"billable" boolean NOT NULL,
	"category" text NOT NULL,
	"n" integer NOT NULL,
	CONSTRAINT "campaign_tallies_campaign_id_shard_status_error_code_billable_category_pk" PRIMARY KEY("campaign_id","shard","status","error_code","billable","category")
);
--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "feed_token" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "fed_rows" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "refused_rows" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "canceled_rows" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE FUNCTION dispatch_campaign_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A statement's inserted messages of campaigns (their id as batch_id, of their key; a `batch`
  -- send's id is no campaign), grouped: one upsert per group, not one per message.
  INSERT INTO campaign_tallies AS t (campaign_id, shard, status, error_code, billable, category, n)
  SELECT m.batch_id, pg_backend_pid(), m.status,
    CASE WHEN m.status::text IN ('failed', 'expired') THEN coalesce(m.last_error_code, '') ELSE '' END,
    coalesce(m.pricing_billable, false),
    CASE WHEN m.pricing_billable THEN coalesce(m.pricing_category, 'unknown') ELSE '' END,
    count(*)::int
  FROM new_rows m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
  GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (campaign_id, shard, status, error_code, billable, category) DO UPDATE SET n = t.n + excluded.n;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A statement trigger fires only on the table its statement names, and is not cloned to partitions:
-- the worker writes into a period's partition directly, so each partition gets its own (partitions.ts
-- calls this for each new one).
CREATE FUNCTION dispatch_campaign_tally_on(target regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TRIGGER campaign_tally_inserted AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION dispatch_campaign_tally_inserted()', target);
END $$;
--> statement-breakpoint
SELECT dispatch_campaign_tally_on('messages');
--> statement-breakpoint
SELECT dispatch_campaign_tally_on(i.inhrelid::regclass) FROM pg_inherits i WHERE i.inhparent = 'messages'::regclass;
--> statement-breakpoint
CREATE FUNCTION dispatch_campaign_tally() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_code text := CASE WHEN OLD.status::text IN ('failed', 'expired') THEN coalesce(OLD.last_error_code, '') ELSE '' END;
  old_category text := CASE WHEN OLD.pricing_billable THEN coalesce(OLD.pricing_category, 'unknown') ELSE '' END;
  new_code text := CASE WHEN NEW.status::text IN ('failed', 'expired') THEN coalesce(NEW.last_error_code, '') ELSE '' END;
  new_category text := CASE WHEN NEW.pricing_billable THEN coalesce(NEW.pricing_category, 'unknown') ELSE '' END;
BEGIN
  -- An update of a message: what the counts read of it (its status, a failed or expired one's
  -- code, billable and a billable one's category) moves from its old group to its new one.
  IF OLD.status = NEW.status AND old_code = new_code AND old_category = new_category
    AND coalesce(OLD.pricing_billable, false) = coalesce(NEW.pricing_billable, false) THEN
    RETURN NULL;
  END IF;
  PERFORM 1 FROM campaigns c WHERE c.id = NEW.batch_id AND c.api_key_id = NEW.api_key_id;
  IF NOT FOUND THEN RETURN NULL; END IF;
  -- One statement, plpgsql's own (planned once per backend; a SQL function is planned every call).
  INSERT INTO campaign_tallies AS t (campaign_id, shard, status, error_code, billable, category, n)
  VALUES (OLD.batch_id, pg_backend_pid(), OLD.status, old_code, coalesce(OLD.pricing_billable, false), old_category, -1),
    (NEW.batch_id, pg_backend_pid(), NEW.status, new_code, coalesce(NEW.pricing_billable, false), new_category, 1)
  ON CONFLICT (campaign_id, shard, status, error_code, billable, category) DO UPDATE SET n = t.n + excluded.n;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A row trigger is cloned to every partition, and its condition is checked before any function is
-- called: a message of no batch, and an update that changes none of what the counts read (a
-- retry's attempts, a redaction), cost nothing more. Messages are never deleted (a period's
-- partition is dropped whole; rows moved out of the default partition are moved, not gone), so
-- nothing counts deletes.
CREATE TRIGGER campaign_tally_update AFTER UPDATE ON messages FOR EACH ROW
  WHEN (NEW.batch_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status
    OR OLD.last_error_code IS DISTINCT FROM NEW.last_error_code
    OR OLD.pricing_billable IS DISTINCT FROM NEW.pricing_billable
    OR OLD.pricing_category IS DISTINCT FROM NEW.pricing_category))
  EXECUTE FUNCTION dispatch_campaign_tally();
--> statement-breakpoint
-- The campaigns already there, counted once from their rows and messages.
UPDATE campaigns c SET
  fed_rows = r.fed + r.refused, refused_rows = r.refused, canceled_rows = r.canceled
FROM (
  SELECT campaign_id,
    count(*) FILTER (WHERE state = 'fed')::int AS fed,
    count(*) FILTER (WHERE state = 'skipped' AND error_code IS NOT NULL)::int AS refused,
    count(*) FILTER (WHERE state = 'canceled')::int AS canceled
  FROM campaign_recipients GROUP BY campaign_id
) r
WHERE r.campaign_id = c.id;
--> statement-breakpoint
INSERT INTO campaign_tallies (campaign_id, shard, status, error_code, billable, category, n)
SELECT m.batch_id, 0, m.status,
  CASE WHEN m.status::text IN ('failed', 'expired') THEN coalesce(m.last_error_code, '') ELSE '' END,
  coalesce(m.pricing_billable, false),
  CASE WHEN m.pricing_billable THEN coalesce(m.pricing_category, 'unknown') ELSE '' END,
  count(*)::int
FROM messages m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
GROUP BY 1, 2, 3, 4, 5, 6;
