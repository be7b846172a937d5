-- Issue 43: a campaign message's status update carried an upsert of two tally rows (its old group's
-- -1, its new group's +1) in the trigger: 1.13x the bare update, over the 5 % a check on the delivery
-- path may cost. Now each write appends what it changed to `campaign_tally_moves` (one row an update,
-- one a group per insert statement; no index, no row anyone waits on), and a fold moves them into
-- `campaign_tallies`, one row per group of a campaign (no more rows per backend, which nothing ever
-- compacted). The counts read both in one statement, so a fold never changes what they read.
CREATE TABLE "campaign_tally_moves" (
	"campaign_id" uuid NOT NULL,
	"from_status" "message_status",
	"from_error_code" text,
	"from_billable" boolean,
	"from_category" text,
	"status" "message_status" NOT NULL,
	"error_code" text NOT NULL,
	"billable" boolean NOT NULL,
	"category" text NOT NULL,
	"n" integer NOT NULL
);
--> statement-breakpoint
-- Each backend's rows of a group summed into one (the writers wait here until the migration ends).
LOCK TABLE "campaign_tallies" IN ACCESS EXCLUSIVE MODE;
--> statement-breakpoint
ALTER TABLE "campaign_tallies" DROP CONSTRAINT "campaign_tallies_campaign_id_shard_status_error_code_billable_category_pk";--> statement-breakpoint
WITH was AS (DELETE FROM "campaign_tallies" RETURNING *)
INSERT INTO "campaign_tallies" (campaign_id, shard, status, error_code, billable, category, n)
SELECT campaign_id, 0, status, error_code, billable, category, sum(n)::int
FROM was GROUP BY campaign_id, status, error_code, billable, category HAVING sum(n) <> 0;
--> statement-breakpoint
ALTER TABLE "campaign_tallies" DROP COLUMN "shard";--> statement-breakpoint
ALTER TABLE "campaign_tallies" ADD CONSTRAINT "campaign_tallies_campaign_id_status_error_code_billable_category_pk" PRIMARY KEY("campaign_id","status","error_code","billable","category");--> statement-breakpoint
CREATE OR REPLACE FUNCTION dispatch_campaign_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A statement's inserted messages of campaigns (their id as batch_id, of their key; a `batch`
  -- send's id is no campaign), one move per group.
  INSERT INTO campaign_tally_moves (campaign_id, status, error_code, billable, category, n)
  SELECT m.batch_id, m.status,
    CASE WHEN m.status::text IN ('failed', 'expired') THEN coalesce(m.last_error_code, '') ELSE '' END,
    coalesce(m.pricing_billable, false),
    CASE WHEN m.pricing_billable THEN coalesce(m.pricing_category, 'unknown') ELSE '' END,
    count(*)::int
  FROM new_rows m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
  GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Fired (by the row trigger of 0041, whose condition is unchanged) only for a message of a batch
-- whose status, code or pricing changed: one row appended, from its old group to its new one, when
-- the batch is a campaign of its key. One statement: the check and the append in one plan.
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
  RETURN NULL;
END $$;
--> statement-breakpoint
-- The fold: every move there is, deleted and summed into `campaign_tallies` (an insert as +n to its
-- group, an update also as -n to the group it left), in one transaction, so a read (tallies and
-- moves in one statement) counts each move once whether before or after it. One fold at a time:
-- another already folding, this one returns at once (what it leaves is read as moves, and folded
-- next time). Answers how many moves it folded.
CREATE FUNCTION dispatch_campaign_tally_fold() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  folded integer;
  touched uuid[];
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('dispatch_campaign_tally_fold', 0)) THEN
    RETURN 0;
  END IF;
  WITH moved AS (
    DELETE FROM campaign_tally_moves RETURNING *
  ), deltas AS (
    SELECT campaign_id, status, error_code, billable, category, n FROM moved
    UNION ALL
    SELECT campaign_id, from_status, from_error_code, from_billable, from_category, -n FROM moved
    WHERE from_status IS NOT NULL
  ), summed AS (
    SELECT campaign_id, status, error_code, billable, category, sum(n)::int AS n,
      (SELECT count(*) FROM moved)::int AS moves
    FROM deltas GROUP BY 1, 2, 3, 4, 5
  ), written AS (
    INSERT INTO campaign_tallies AS t (campaign_id, status, error_code, billable, category, n)
    SELECT campaign_id, status, error_code, billable, category, n FROM summed WHERE n <> 0
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (campaign_id, status, error_code, billable, category) DO UPDATE SET n = t.n + excluded.n
  )
  SELECT coalesce(max(moves), 0), array_agg(DISTINCT campaign_id) INTO folded, touched FROM summed;
  -- Groups the folded campaigns' messages all left (every `sent` one now `delivered`): nothing to read.
  IF folded > 0 THEN
    DELETE FROM campaign_tallies WHERE campaign_id = ANY (touched) AND n = 0;
  END IF;
  RETURN folded;
END $$;
