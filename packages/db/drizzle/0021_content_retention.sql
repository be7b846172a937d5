ALTER TABLE "api_keys" ADD COLUMN "content_retention_hours" integer;--> statement-breakpoint
ALTER TABLE "inbound_messages" ADD COLUMN "redact_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "redact_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "inbound_content_retention_hours" integer;--> statement-breakpoint
CREATE INDEX "inbound_messages_redact_after_idx" ON "inbound_messages" USING btree ("redact_after") WHERE "inbound_messages"."redact_after" is not null and "inbound_messages"."redacted_at" is null;--> statement-breakpoint
CREATE INDEX "messages_redact_after_idx" ON "messages" USING btree ("redact_after") WHERE "messages"."redact_after" is not null and "messages"."redacted_at" is null;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_content_retention_hours_check" CHECK ("api_keys"."content_retention_hours" between 0 and 8760);--> statement-breakpoint
ALTER TABLE "senders" ADD CONSTRAINT "senders_inbound_content_retention_hours_check" CHECK ("senders"."inbound_content_retention_hours" between 0 and 8760);--> statement-breakpoint
-- A message whose content was removed (`redacted_at`: content retention or an erasure) says so in
-- its events (`redacted: true`, only then, so other events keep their shape). Message events carry
-- no content of their own; the sweeper marks the ones stored before the redaction.
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
		|| CASE WHEN NEW.user_id IS NOT NULL THEN jsonb_build_object('userId', NEW.user_id) ELSE '{}'::jsonb END
		|| CASE WHEN NEW.redacted_at IS NOT NULL THEN jsonb_build_object('redacted', true) ELSE '{}'::jsonb END,
		v_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
-- A reply stored redacted (its sender discards replies' content) has `{}` for content: its event
-- says who wrote, when and in answer to what, and `redacted: true`, never what was said.
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
		|| CASE WHEN NEW.redacted_at IS NOT NULL THEN jsonb_build_object('redacted', true) ELSE '{}'::jsonb END
		|| NEW.content,
		NEW.received_at);
	RETURN NULL;
END $$;
