-- Issue 44, channel fallback: a message's fallback to SMS, at most one per message, and the state
-- that makes its SMS go at most once (decided -> calling, written before the provider is called ->
-- sent | failed | unknown; or withdrawn when WhatsApp delivered first). docs/failover.md.
CREATE TABLE "message_fallbacks" (
	"message_id" uuid PRIMARY KEY NOT NULL,
	"accepted_at" timestamp with time zone NOT NULL,
	"api_key_id" uuid NOT NULL,
	"channel" text DEFAULT 'sms' NOT NULL,
	"reason" text NOT NULL,
	"reason_code" text,
	"state" text NOT NULL,
	"decided_at" timestamp with time zone NOT NULL,
	"calling_at" timestamp with time zone,
	"settled_at" timestamp with time zone,
	"provider" text,
	"provider_message_id" text,
	"provider_status" text,
	"provider_status_at" timestamp with time zone,
	"error_code" text,
	"error_message" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "message_fallbacks_state_check" CHECK ("message_fallbacks"."state" in ('decided', 'withdrawn', 'calling', 'sent', 'failed', 'unknown'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "message_fallbacks_provider_message_id_idx" ON "message_fallbacks" USING btree ("provider_message_id") WHERE "message_fallbacks"."provider_message_id" is not null;--> statement-breakpoint
CREATE INDEX "message_fallbacks_calling_idx" ON "message_fallbacks" USING btree ("calling_at") WHERE "message_fallbacks"."state" = 'calling';