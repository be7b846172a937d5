ALTER TYPE "public"."message_status" ADD VALUE 'scheduled' BEFORE 'queued';--> statement-breakpoint
ALTER TYPE "public"."message_status" ADD VALUE 'expired';--> statement-breakpoint
ALTER TYPE "public"."message_status" ADD VALUE 'canceled';--> statement-breakpoint
CREATE TABLE "media" (
	"id" text PRIMARY KEY NOT NULL,
	"api_key_id" uuid NOT NULL,
	"mime_type" text NOT NULL,
	"size" integer NOT NULL,
	"sha256" text NOT NULL,
	"data" "bytea",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "batch_id" uuid;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "expired_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "canceled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "media" ADD CONSTRAINT "media_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "media_api_key_id_created_at_idx" ON "media" USING btree ("api_key_id","created_at");--> statement-breakpoint
CREATE INDEX "messages_api_key_batch_idx" ON "messages" USING btree ("api_key_id","batch_id") WHERE "messages"."batch_id" is not null;--> statement-breakpoint
-- Expired and canceled messages are events too (message.expired, message.canceled).
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
				'willRetry', v_retrying) END),
		v_at);
	RETURN NULL;
END $$;
