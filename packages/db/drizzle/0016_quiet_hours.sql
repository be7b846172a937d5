ALTER TABLE "api_keys" ADD COLUMN "quiet_hours" jsonb;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "held_for_quiet_hours" boolean DEFAULT false NOT NULL;