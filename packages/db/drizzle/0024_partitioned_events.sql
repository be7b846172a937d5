-- Replies, webhook events and their attempts move to tables partitioned by time, as messages did in
-- 0023 (docs/operations.md, Data lifecycle): old periods are dropped whole instead of deleted row by
-- row. Nothing is copied: each table becomes its own `<table>_legacy` partition, holding every row up
-- to the end of the UTC day an hour from now (a reply's time is the platform's and may run up to an
-- hour ahead of ours), dropped whole once that day is past retention; `<table>_default` catches a row
-- no period holds yet. The costs, on a large table, are those of 0023: a scan per table to check its
-- range, and the index builds below, unless an operator built them beforehand, concurrently, under
-- the names used here.
--
-- Keys of a partitioned table hold its column:
-- - inbound_messages: (id, received_at), and the wamid is unique with `received_at`. `received_at`
--   is the platform's `timestamp` for the reply, the same on each redelivery, so a redelivery meets
--   the stored copy in this index and is still stored once (`created_at`, our time, would not be).
-- - webhook_events: (id, created_at). Event ids are now `msg_` and the hex of a UUIDv7 of their
--   `created_at` (dispatch_emit_webhook_event below), so a lookup by id names its partition.
-- - webhook_attempts: (id, created_at), and no foreign key to webhook_events: one would need the
--   event's `created_at` too. Attempts carry the events' retention and are dropped by age with them.
DROP TRIGGER inbound_messages_webhook_events ON inbound_messages;--> statement-breakpoint
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_event_id_webhook_events_id_fk;--> statement-breakpoint

ALTER TABLE inbound_messages RENAME TO inbound_messages_legacy;--> statement-breakpoint
ALTER TABLE inbound_messages_legacy DROP CONSTRAINT inbound_messages_pkey;--> statement-breakpoint
ALTER TABLE inbound_messages_legacy DROP CONSTRAINT "inbound_messages_platformMessageId_unique";--> statement-breakpoint
ALTER INDEX inbound_messages_api_key_id_received_at_idx RENAME TO inbound_messages_legacy_api_key_id_received_at_idx;--> statement-breakpoint
ALTER INDEX inbound_messages_media_id_idx RENAME TO inbound_messages_legacy_media_id_idx;--> statement-breakpoint
ALTER INDEX inbound_messages_redact_after_idx RENAME TO inbound_messages_legacy_redact_after_idx;--> statement-breakpoint
ALTER INDEX inbound_messages_unrouted_idx RENAME TO inbound_messages_legacy_unrouted_idx;--> statement-breakpoint
CREATE TABLE inbound_messages (LIKE inbound_messages_legacy INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (received_at);--> statement-breakpoint
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_id_received_at_pk PRIMARY KEY (id, received_at);--> statement-breakpoint
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_api_key_id_api_keys_id_fk FOREIGN KEY (api_key_id) REFERENCES api_keys(id) ON DELETE SET NULL;--> statement-breakpoint
CREATE UNIQUE INDEX inbound_messages_platform_message_id_received_at_idx ON inbound_messages (platform_message_id, received_at);--> statement-breakpoint
CREATE INDEX inbound_messages_api_key_id_received_at_idx ON inbound_messages (api_key_id, received_at);--> statement-breakpoint
CREATE INDEX inbound_messages_media_id_idx ON inbound_messages (((content -> 'media') ->> 'id'));--> statement-breakpoint
CREATE INDEX inbound_messages_redact_after_idx ON inbound_messages (redact_after) WHERE redact_after IS NOT NULL AND redacted_at IS NULL;--> statement-breakpoint
CREATE INDEX inbound_messages_unrouted_idx ON inbound_messages (received_at) WHERE api_key_id IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS inbound_messages_legacy_id_received_at_idx ON inbound_messages_legacy (id, received_at);--> statement-breakpoint
ALTER TABLE inbound_messages_legacy ADD CONSTRAINT inbound_messages_legacy_pkey PRIMARY KEY USING INDEX inbound_messages_legacy_id_received_at_idx;--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS inbound_messages_legacy_platform_message_id_received_at_idx ON inbound_messages_legacy (platform_message_id, received_at);--> statement-breakpoint

ALTER TABLE webhook_events RENAME TO webhook_events_legacy;--> statement-breakpoint
ALTER TABLE webhook_events_legacy DROP CONSTRAINT webhook_events_pkey;--> statement-breakpoint
ALTER INDEX webhook_events_api_key_id_created_at_idx RENAME TO webhook_events_legacy_api_key_id_created_at_idx;--> statement-breakpoint
ALTER INDEX webhook_events_created_at_idx RENAME TO webhook_events_legacy_created_at_idx;--> statement-breakpoint
ALTER INDEX webhook_events_message_id_sequence_idx RENAME TO webhook_events_legacy_message_id_sequence_idx;--> statement-breakpoint
CREATE TABLE webhook_events (LIKE webhook_events_legacy INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (created_at);--> statement-breakpoint
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_id_created_at_pk PRIMARY KEY (id, created_at);--> statement-breakpoint
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_api_key_id_api_keys_id_fk FOREIGN KEY (api_key_id) REFERENCES api_keys(id) ON DELETE CASCADE;--> statement-breakpoint
CREATE INDEX webhook_events_api_key_id_created_at_idx ON webhook_events (api_key_id, created_at);--> statement-breakpoint
CREATE INDEX webhook_events_created_at_idx ON webhook_events (created_at);--> statement-breakpoint
CREATE INDEX webhook_events_message_id_sequence_idx ON webhook_events (message_id, sequence);--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_legacy_id_created_at_idx ON webhook_events_legacy (id, created_at);--> statement-breakpoint
ALTER TABLE webhook_events_legacy ADD CONSTRAINT webhook_events_legacy_pkey PRIMARY KEY USING INDEX webhook_events_legacy_id_created_at_idx;--> statement-breakpoint

ALTER TABLE webhook_attempts RENAME TO webhook_attempts_legacy;--> statement-breakpoint
ALTER TABLE webhook_attempts_legacy DROP CONSTRAINT webhook_attempts_pkey;--> statement-breakpoint
ALTER INDEX webhook_attempts_endpoint_id_created_at_idx RENAME TO webhook_attempts_legacy_endpoint_id_created_at_idx;--> statement-breakpoint
ALTER INDEX webhook_attempts_event_id_idx RENAME TO webhook_attempts_legacy_event_id_idx;--> statement-breakpoint
ALTER INDEX webhook_attempts_failed_created_at_idx RENAME TO webhook_attempts_legacy_failed_created_at_idx;--> statement-breakpoint
CREATE TABLE webhook_attempts (LIKE webhook_attempts_legacy INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (created_at);--> statement-breakpoint
-- The id sequence belongs to the new table: dropping the legacy partition must not drop it.
ALTER SEQUENCE webhook_attempts_id_seq OWNED BY webhook_attempts.id;--> statement-breakpoint
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_id_created_at_pk PRIMARY KEY (id, created_at);--> statement-breakpoint
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_endpoint_id_webhook_endpoints_id_fk FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE;--> statement-breakpoint
CREATE INDEX webhook_attempts_endpoint_id_created_at_idx ON webhook_attempts (endpoint_id, created_at);--> statement-breakpoint
CREATE INDEX webhook_attempts_event_id_idx ON webhook_attempts (event_id);--> statement-breakpoint
CREATE INDEX webhook_attempts_failed_created_at_idx ON webhook_attempts (created_at) WHERE status_code IS NULL OR status_code NOT BETWEEN 200 AND 299;--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS webhook_attempts_legacy_id_created_at_idx ON webhook_attempts_legacy (id, created_at);--> statement-breakpoint
ALTER TABLE webhook_attempts_legacy ADD CONSTRAINT webhook_attempts_legacy_pkey PRIMARY KEY USING INDEX webhook_attempts_legacy_id_created_at_idx;--> statement-breakpoint
DO $$
DECLARE
	v_cutoff timestamptz := (date_trunc('day', (now() + interval '1 hour') AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
BEGIN
	EXECUTE format('ALTER TABLE inbound_messages ATTACH PARTITION inbound_messages_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cutoff);
	EXECUTE format('ALTER TABLE webhook_events ATTACH PARTITION webhook_events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cutoff);
	EXECUTE format('ALTER TABLE webhook_attempts ATTACH PARTITION webhook_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cutoff);
END $$;--> statement-breakpoint
CREATE TABLE inbound_messages_default PARTITION OF inbound_messages DEFAULT;--> statement-breakpoint
CREATE TABLE webhook_events_default PARTITION OF webhook_events DEFAULT;--> statement-breakpoint
CREATE TABLE webhook_attempts_default PARTITION OF webhook_attempts DEFAULT;--> statement-breakpoint
-- Declared on the partitioned table, the trigger fires for every partition, present and future.
CREATE TRIGGER inbound_messages_webhook_events AFTER INSERT ON inbound_messages
	FOR EACH ROW EXECUTE FUNCTION dispatch_inbound_webhook_events();--> statement-breakpoint
-- An event's id carries its `created_at` (the transaction's time, as before): `msg_` and the hex of
-- a UUIDv7 of that millisecond (RFC 9562: 48 bits of time, version 7, the random UUID's other bits).
-- Receivers see the same shape as before, `msg_` and 32 hex digits.
CREATE OR REPLACE FUNCTION dispatch_emit_webhook_event(p_api_key_id uuid, p_type text, p_message_id uuid, p_data jsonb, p_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz := now();
	v_id text;
	v_sequence integer;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE api_key_id = p_api_key_id) THEN
		RETURN;
	END IF;
	v_id := 'msg_' || lpad(to_hex(floor(extract(epoch FROM v_now) * 1000)::bigint), 12, '0') || '7'
		|| substr(replace(gen_random_uuid()::text, '-', ''), 14);
	-- The message's row is locked by the change being reported, so its events number one at a time.
	SELECT coalesce(max(sequence), 0) + 1 INTO v_sequence FROM webhook_events WHERE message_id = p_message_id;
	INSERT INTO webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
	VALUES (v_id, p_api_key_id, p_type, p_message_id, v_sequence, jsonb_build_object(
		'type', p_type,
		'timestamp', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
		'data', p_data || jsonb_build_object('sequence', v_sequence)), v_now);
	INSERT INTO outbox (topic, payload) VALUES ('webhook', jsonb_build_object('eventId', v_id));
	PERFORM pg_notify('dispatch_outbox', '');
END $$;
