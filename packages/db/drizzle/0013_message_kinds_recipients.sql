ALTER TYPE "public"."message_type" ADD VALUE 'document';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'video';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'audio';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'sticker';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'location';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'contacts';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'interactive';--> statement-breakpoint
ALTER TYPE "public"."message_type" ADD VALUE 'reaction';--> statement-breakpoint
CREATE TABLE "recipient_identities" (
	"user_id" text PRIMARY KEY NOT NULL,
	"phone" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "inbound_messages" ALTER COLUMN "phone" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "phone" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "inbound_messages" ADD COLUMN "user_id" text;--> statement-breakpoint
ALTER TABLE "inbound_messages" ADD COLUMN "username" text;--> statement-breakpoint
ALTER TABLE "inbound_messages" ADD COLUMN "context_id" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "user_id" text;--> statement-breakpoint
CREATE INDEX "recipient_identities_phone_idx" ON "recipient_identities" USING btree ("phone");--> statement-breakpoint
CREATE INDEX "inbound_messages_media_id_idx" ON "inbound_messages" USING btree (("content"->'media'->>'id'));--> statement-breakpoint
CREATE INDEX "messages_user_id_sent_at_idx" ON "messages" USING btree ("user_id","sent_at") WHERE "messages"."user_id" is not null;--> statement-breakpoint
-- A message sent to a BSUID says so in its events (`userId`, only then, so other events keep their shape).
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
		|| CASE WHEN NEW.fallback_used THEN jsonb_build_object('fallbackUsed', true) ELSE '{}'::jsonb END
		|| CASE WHEN NEW.user_id IS NOT NULL THEN jsonb_build_object('userId', NEW.user_id) ELSE '{}'::jsonb END,
		v_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
-- A reply carries whichever of phone, BSUID and username the platform gave, and the wamid it quotes.
CREATE OR REPLACE FUNCTION dispatch_inbound_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.api_key_id IS NULL THEN
		RETURN NULL;
	END IF;
	PERFORM dispatch_emit_webhook_event(
		NEW.api_key_id,
		'message.received',
		NEW.id,
		jsonb_build_object(
			'messageId', NEW.id,
			'clientReference', (SELECT client_reference FROM messages WHERE id = NEW.in_reply_to),
			'inReplyTo', NEW.in_reply_to,
			'type', NEW.type,
			'phone', NEW.phone,
			'phoneNumberId', NEW.phone_number_id,
			'status', 'received')
		|| CASE WHEN NEW.user_id IS NOT NULL THEN jsonb_build_object('userId', NEW.user_id) ELSE '{}'::jsonb END
		|| CASE WHEN NEW.username IS NOT NULL THEN jsonb_build_object('username', NEW.username) ELSE '{}'::jsonb END
		|| CASE WHEN NEW.context_id IS NOT NULL THEN jsonb_build_object('context', jsonb_build_object('platformMessageId', NEW.context_id, 'messageId', NEW.in_reply_to)) ELSE '{}'::jsonb END
		|| NEW.content,
		NEW.received_at);
	RETURN NULL;
END $$;
