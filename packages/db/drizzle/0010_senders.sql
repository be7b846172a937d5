CREATE TYPE "public"."sender_state" AS ENUM('active', 'paused', 'needs_attention');--> statement-breakpoint
CREATE TABLE "senders" (
	"id" text PRIMARY KEY NOT NULL,
	"phone_number_id" text NOT NULL,
	"display_name" text NOT NULL,
	"display_phone_number" text,
	"access_token_ciphertext" text,
	"access_token_last4" text,
	"rate_per_second" integer DEFAULT 80 NOT NULL,
	"state" "sender_state" DEFAULT 'active' NOT NULL,
	"state_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "senders_phoneNumberId_unique" UNIQUE("phone_number_id")
);
--> statement-breakpoint
ALTER TABLE "api_key_audit_log" ADD COLUMN "changes" jsonb;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "sender_id" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rate_per_second" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "daily_quota" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "transactional" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "sender_id" text;--> statement-breakpoint
CREATE INDEX "senders_display_phone_number_idx" ON "senders" USING btree ("display_phone_number");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_sender_id_senders_id_fk" FOREIGN KEY ("sender_id") REFERENCES "public"."senders"("id") ON DELETE no action ON UPDATE no action;