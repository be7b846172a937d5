CREATE TABLE "conversation_windows" (
	"phone_number_id" text NOT NULL,
	"phone" text NOT NULL,
	"last_inbound_at" timestamp with time zone NOT NULL,
	CONSTRAINT "conversation_windows_phone_number_id_phone_pk" PRIMARY KEY("phone_number_id","phone")
);
--> statement-breakpoint
CREATE TABLE "inbound_messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"platform_message_id" text NOT NULL,
	"phone_number_id" text NOT NULL,
	"phone" text NOT NULL,
	"type" text NOT NULL,
	"content" jsonb NOT NULL,
	"api_key_id" uuid,
	"in_reply_to" uuid,
	"received_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbound_messages_platformMessageId_unique" UNIQUE("platform_message_id")
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"event_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"status_code" integer,
	"duration_ms" integer NOT NULL,
	"response_excerpt" text,
	"error" text,
	"next_retry_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"id" text PRIMARY KEY NOT NULL,
	"api_key_id" uuid NOT NULL,
	"type" text NOT NULL,
	"message_id" uuid,
	"sequence" integer,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "sender_phone_number_id" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "failing_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "disabled_reason" text;--> statement-breakpoint
ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_event_id_webhook_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."webhook_events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "inbound_messages_api_key_id_received_at_idx" ON "inbound_messages" USING btree ("api_key_id","received_at");--> statement-breakpoint
CREATE INDEX "inbound_messages_unrouted_idx" ON "inbound_messages" USING btree ("received_at") WHERE "inbound_messages"."api_key_id" is null;--> statement-breakpoint
CREATE INDEX "webhook_attempts_endpoint_id_created_at_idx" ON "webhook_attempts" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_attempts_event_id_idx" ON "webhook_attempts" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "webhook_events_api_key_id_created_at_idx" ON "webhook_events" USING btree ("api_key_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_events_message_id_sequence_idx" ON "webhook_events" USING btree ("message_id","sequence");--> statement-breakpoint
CREATE INDEX "webhook_events_created_at_idx" ON "webhook_events" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "messages_phone_sent_at_idx" ON "messages" USING btree ("phone","sent_at");--> statement-breakpoint
-- Webhook events are written by triggers, in the transaction of the change they report: every
-- path that moves a message (the worker's batched record, the platform's status webhook, later a
-- cancel) emits them, and none is emitted for a change that rolled back. Keys without an endpoint
-- get none, at the cost of one index probe per changed row.
CREATE FUNCTION dispatch_emit_webhook_event(p_api_key_id uuid, p_type text, p_message_id uuid, p_data jsonb, p_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	v_id text;
	v_sequence integer;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE api_key_id = p_api_key_id) THEN
		RETURN;
	END IF;
	v_id := 'msg_' || replace(gen_random_uuid()::text, '-', '');
	-- The message's row is locked by the change being reported, so its events number one at a time.
	SELECT coalesce(max(sequence), 0) + 1 INTO v_sequence FROM webhook_events WHERE message_id = p_message_id;
	INSERT INTO webhook_events (id, api_key_id, type, message_id, sequence, payload)
	VALUES (v_id, p_api_key_id, p_type, p_message_id, v_sequence, jsonb_build_object(
		'type', p_type,
		'timestamp', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
		'data', p_data || jsonb_build_object('sequence', v_sequence)));
	INSERT INTO outbox (topic, payload) VALUES ('webhook', jsonb_build_object('eventId', v_id));
	PERFORM pg_notify('dispatch_outbox', '');
END $$;
--> statement-breakpoint
CREATE FUNCTION dispatch_message_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
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
	ELSIF NOT (v_status IN ('sent', 'delivered', 'read', 'failed') OR v_retrying) THEN
		RETURN NULL;
	END IF;
	v_at := coalesce(CASE v_status
		WHEN 'sent' THEN NEW.sent_at
		WHEN 'delivered' THEN NEW.delivered_at
		WHEN 'read' THEN NEW.read_at
		WHEN 'failed' THEN NEW.failed_at
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
			'error', CASE WHEN v_retrying OR v_status = 'failed' THEN jsonb_build_object(
				'code', NEW.last_error_code,
				'message', NEW.last_error_message,
				'willRetry', v_retrying) END),
		v_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER messages_webhook_events AFTER INSERT OR UPDATE OF status, attempts ON messages
	FOR EACH ROW EXECUTE FUNCTION dispatch_message_webhook_events();
--> statement-breakpoint
CREATE FUNCTION dispatch_inbound_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
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
			'status', 'received') || NEW.content,
		NEW.received_at);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER inbound_messages_webhook_events AFTER INSERT ON inbound_messages
	FOR EACH ROW EXECUTE FUNCTION dispatch_inbound_webhook_events();
