-- Issue 44, channel fallback (docs/failover.md). The SMS's prices, which the provider's status
-- callbacks do not carry, asked for from its Message resource once the SMS's delivery ended: when
-- last asked and how often (sms-price-sweep.ts), and the due ones found by a partial index.
ALTER TABLE "message_fallbacks" ADD COLUMN "price_checked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "message_fallbacks" ADD COLUMN "price_checks" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "message_fallbacks_price_due_idx" ON "message_fallbacks" USING btree ("price_checked_at") WHERE "message_fallbacks"."state" = 'sent' and "message_fallbacks"."price" is null and "message_fallbacks"."provider_status" in ('delivered', 'undelivered', 'failed');--> statement-breakpoint
-- `message.delivered_after_failure`: WhatsApp's `delivered` (or `read`) of a message already `failed`
-- (a 131026, whose SMS fallback may have gone) is recorded beside it, `failed` staying
-- (applyPlatformStatusTo sets `delivered_at` without moving the status): once, at the first such
-- report, with the fallback's state then. docs/failover.md, "WhatsApp's word after the fallback".
CREATE FUNCTION dispatch_late_delivery_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	v_fallback text;
BEGIN
	SELECT state INTO v_fallback FROM message_fallbacks WHERE message_id = NEW.id;
	PERFORM dispatch_emit_webhook_event(
		NEW.api_key_id,
		'message.delivered_after_failure',
		NEW.id,
		jsonb_build_object(
			'messageId', NEW.id,
			'clientReference', NEW.client_reference,
			'type', NEW.type,
			'phone', NEW.phone,
			'status', NEW.status::text,
			'reported', CASE WHEN NEW.read_at IS NOT NULL THEN 'read' ELSE 'delivered' END,
			'deliveredAt', to_char(NEW.delivered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
			'fallbackState', v_fallback)
		|| CASE WHEN NEW.user_id IS NOT NULL THEN jsonb_build_object('userId', NEW.user_id) ELSE '{}'::jsonb END
		|| CASE WHEN NEW.redacted_at IS NOT NULL THEN jsonb_build_object('redacted', true) ELSE '{}'::jsonb END,
		NEW.delivered_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER messages_late_delivery_webhook_events AFTER UPDATE OF delivered_at ON messages
	FOR EACH ROW WHEN (NEW.status = 'failed' AND OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL)
	EXECUTE FUNCTION dispatch_late_delivery_webhook_events();
