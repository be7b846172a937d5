-- Issue 43: an audience's rows are kept in a table of their campaign's own, a partition of
-- campaign_recipients (LIST by campaign_id). A first upload writes its rows by COPY into a new
-- table with no index, builds the key once (sorted, in one pass), then attaches it: the key's
-- entry per row cost more than the rest of the row (bench:campaign-upload). Readers are
-- unchanged: every query names campaign_recipients. The rows already there move to a table of
-- their campaign's own each, here; rows written by hand for a campaign without its table land in
-- the DEFAULT partition (empty otherwise: an attach scans it).
ALTER TABLE "campaign_recipients" RENAME TO "campaign_recipients_before_0044";--> statement-breakpoint
ALTER TABLE "campaign_recipients_before_0044" RENAME CONSTRAINT "campaign_recipients_campaign_id_line_pk" TO "campaign_recipients_before_0044_pkey";--> statement-breakpoint
CREATE TABLE "campaign_recipients" (LIKE "campaign_recipients_before_0044" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY LIST ("campaign_id");--> statement-breakpoint
ALTER TABLE "campaign_recipients" ADD CONSTRAINT "campaign_recipients_campaign_id_line_pk" PRIMARY KEY ("campaign_id", "line");--> statement-breakpoint
DO $$
DECLARE
  campaign uuid;
  own text;
BEGIN
  -- Attached before the default partition exists: no attach scans another table.
  FOR campaign IN SELECT DISTINCT campaign_id FROM "campaign_recipients_before_0044" LOOP
    own := 'campaign_recipients_' || replace(campaign::text, '-', '');
    EXECUTE format('CREATE TABLE %I (LIKE campaign_recipients INCLUDING DEFAULTS INCLUDING CONSTRAINTS, CONSTRAINT %I CHECK (campaign_id = %L))', own, own || '_campaign', campaign);
    EXECUTE format('INSERT INTO %I SELECT * FROM "campaign_recipients_before_0044" WHERE campaign_id = %L ORDER BY line', own, campaign);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (campaign_id, line)', own, own || '_pkey');
    EXECUTE format('ALTER TABLE campaign_recipients ATTACH PARTITION %I FOR VALUES IN (%L)', own, campaign);
  END LOOP;
END $$;--> statement-breakpoint
CREATE TABLE "campaign_recipients_default" PARTITION OF "campaign_recipients" DEFAULT;--> statement-breakpoint
DROP TABLE "campaign_recipients_before_0044";
