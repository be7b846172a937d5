-- Templates and the 24-hour window (issue 21): each sender's template catalog, its WABA id, window
-- policy and health as Meta reports it; on messages, whether the fallback template went out and what
-- the platform said the message costs. Every column added is nullable or has a constant default, so
-- no table is rewritten.
CREATE TYPE "public"."service_window_policy" AS ENUM('off', 'enforce');--> statement-breakpoint
CREATE TABLE "message_templates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"sender_id" text NOT NULL,
	"platform_template_id" text NOT NULL,
	"name" text NOT NULL,
	"language" text NOT NULL,
	"status" text NOT NULL,
	"rejected_reason" text,
	"category" text,
	"quality" text,
	"parameter_format" text DEFAULT 'POSITIONAL' NOT NULL,
	"components" jsonb NOT NULL,
	"variables" jsonb NOT NULL,
	"synced_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "fallback_used" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "pricing_billable" boolean;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "pricing_model" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "pricing_category" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "pricing_type" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "waba_id" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "service_window_policy" "service_window_policy" DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "templates_synced_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "account_status" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "account_status_reason" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "messaging_limit_tier" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "quality_rating" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "health_updated_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "message_templates" ADD CONSTRAINT "message_templates_sender_id_senders_id_fk" FOREIGN KEY ("sender_id") REFERENCES "public"."senders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "message_templates_sender_name_language_idx" ON "message_templates" USING btree ("sender_id","name","language");--> statement-breakpoint
CREATE UNIQUE INDEX "message_templates_sender_platform_id_idx" ON "message_templates" USING btree ("sender_id","platform_template_id");--> statement-breakpoint
CREATE INDEX "message_templates_platform_id_idx" ON "message_templates" USING btree ("platform_template_id");--> statement-breakpoint
CREATE INDEX "senders_waba_id_idx" ON "senders" USING btree ("waba_id");--> statement-breakpoint
-- A message sent as its fallback template says so in its events (only then, so other events keep
-- their shape).
CREATE OR REPLACE FUNCTION dispatch_message_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	v_status text := NEW.status::text;
	v_retrying boolean := NEW.status = 'sending' AND NEW.last_error_code IS NOT NULL;
	v_at timestamptz;
BEGIN
	IF TG_OP = 'UPDATE' AND NEW.status = OLD.status THEN
		-- Same status: only a retried attempt that failed again is news.
		IF NOT (v_retrying AND NEW.attempts > OLD.attempts) THEN
			RETURN NULL;
		END IF;
	ELSIF NOT (v_status IN ('sent', 'delivered', 'read', 'failed', 'expired', 'canceled') OR v_retrying) THEN
		RETURN NULL;
	END IF;
	v_at := coalesce(CASE v_status
		WHEN 'sent' THEN NEW.sent_at
		WHEN 'delivered' THEN NEW.delivered_at
		WHEN 'read' THEN NEW.read_at
		WHEN 'failed' THEN NEW.failed_at
		WHEN 'expired' THEN NEW.expired_at
		WHEN 'canceled' THEN NEW.canceled_at
	END, NEW.updated_at);
	PERFORM dispatch_emit_webhook_event(
		NEW.api_key_id,
		CASE WHEN v_retrying THEN 'message.failed' ELSE 'message.' || v_status END,
		NEW.id,
		jsonb_build_object(
			'messageId', NEW.id,
			'clientReference', NEW.client_reference,
			'type', NEW.type,
			'phone', NEW.phone,
			'status', v_status,
			'attempts', NEW.attempts,
			'error', CASE WHEN v_retrying OR v_status IN ('failed', 'expired') THEN jsonb_build_object(
				'code', NEW.last_error_code,
				'message', NEW.last_error_message,
				'willRetry', v_retrying) END)
		|| CASE WHEN NEW.fallback_used THEN jsonb_build_object('fallbackUsed', true) ELSE '{}'::jsonb END,
		v_at);
	RETURN NULL;
END $$;
