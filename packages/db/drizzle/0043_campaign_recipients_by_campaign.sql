-- Issue 43: an audience's rows are kept in a table of their campaign's own, a partition of
-- campaign_recipients (LIST by campaign_id). A first upload writes its rows by COPY into a new
-- table with no index, builds the key once (sorted, in one pass), then attaches it: the key's
-- entry per row cost more than the rest of the row (bench:campaign-upload). Rows of a campaign
-- without its own table (written before this, or by hand) stay in the DEFAULT partition, which
-- is the table as it was. Readers are unchanged: every query names campaign_recipients.
ALTER TABLE "campaign_recipients" RENAME TO "campaign_recipients_default";--> statement-breakpoint
ALTER TABLE "campaign_recipients_default" RENAME CONSTRAINT "campaign_recipients_campaign_id_line_pk" TO "campaign_recipients_default_pkey";--> statement-breakpoint
CREATE TABLE "campaign_recipients" (LIKE "campaign_recipients_default" INCLUDING DEFAULTS) PARTITION BY LIST ("campaign_id");--> statement-breakpoint
ALTER TABLE "campaign_recipients" ADD CONSTRAINT "campaign_recipients_campaign_id_line_pk" PRIMARY KEY ("campaign_id", "line");--> statement-breakpoint
ALTER TABLE "campaign_recipients" ATTACH PARTITION "campaign_recipients_default" DEFAULT;
