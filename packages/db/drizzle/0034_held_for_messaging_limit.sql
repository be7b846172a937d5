-- Issue 43: a message the worker holds for its portfolio's messaging limit is recorded `scheduled`
-- with why (`scheduled_reason`), so a campaign counts it held; and a campaign says why its feeder
-- waits (`waiting_for`: its key's daily quota is spent) and until when. Nullable columns without a
-- default: no table rewrite (messages is partitioned and large). `held_for_quiet_hours` stays: pods
-- of the release before still write it during a rollout.
ALTER TABLE "campaigns" ADD COLUMN "waiting_for" text;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "waiting_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "scheduled_reason" text;
