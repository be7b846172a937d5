ALTER TABLE "senders" ADD COLUMN "consent_keywords" jsonb;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "consent_confirmation" jsonb;