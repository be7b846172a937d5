ALTER TABLE "inbound_messages" ADD COLUMN "redacted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "redacted_at" timestamp with time zone;