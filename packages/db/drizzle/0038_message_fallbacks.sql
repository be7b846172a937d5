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
CREATE INDEX "message_fallbacks_calling_idx" ON "message_fallbacks" USING btree ("calling_at") WHERE "message_fallbacks"."state" = 'calling';--> statement-breakpoint
-- `message.fallback_sent`: once, when a fallback's SMS was taken by the provider (`calling` -> `sent`),
-- with the message's own fields as its other events carry them. The message's row is locked first,
-- as a status change locks it, so its events number one at a time.
CREATE FUNCTION dispatch_fallback_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	m record;
BEGIN
	SELECT id, api_key_id, client_reference, type, phone, user_id, status, redacted_at INTO m
	FROM messages WHERE id = NEW.message_id AND accepted_at = NEW.accepted_at FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	PERFORM dispatch_emit_webhook_event(
		m.api_key_id,
		'message.fallback_sent',
		m.id,
		jsonb_build_object(
			'messageId', m.id,
			'clientReference', m.client_reference,
			'type', m.type,
			'phone', m.phone,
			'status', m.status::text,
			'channel', 'sms',
			'fallback', jsonb_build_object(
				'channel', 'sms',
				'reason', NEW.reason,
				'reasonCode', NEW.reason_code,
				'at', to_char(NEW.decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
				'state', NEW.state,
				'status', NEW.provider_status))
		|| CASE WHEN m.user_id IS NOT NULL THEN jsonb_build_object('userId', m.user_id) ELSE '{}'::jsonb END
		|| CASE WHEN m.redacted_at IS NOT NULL THEN jsonb_build_object('redacted', true) ELSE '{}'::jsonb END,
		NEW.settled_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER message_fallbacks_webhook_events AFTER UPDATE OF state ON message_fallbacks
	FOR EACH ROW WHEN (NEW.state = 'sent' AND OLD.state IS DISTINCT FROM 'sent')
	EXECUTE FUNCTION dispatch_fallback_webhook_events();
