CREATE TYPE "public"."messaging_limit_policy" AS ENUM('hold', 'refuse', 'off');--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "business_id" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "messaging_limit_policy" "messaging_limit_policy" DEFAULT 'hold' NOT NULL;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "messaging_limit_override" integer;--> statement-breakpoint
ALTER TABLE "senders" ADD CONSTRAINT "senders_messaging_limit_override_check" CHECK ("senders"."messaging_limit_override" > 0);--> statement-breakpoint
-- Senders whose tier Meta reported before this migration keep sending as they did (`off`): their
-- admin opts in to `hold` or `refuse`. Every other sender holds once a limit becomes known.
UPDATE "senders" SET "messaging_limit_policy" = 'off' WHERE "messaging_limit_tier" IS NOT NULL;
