-- Messages and their attempts move to tables partitioned by time (docs/operations.md, Data
-- lifecycle): old periods are dropped whole instead of deleted row by row. Nothing is copied: today's
-- table becomes one partition, `<table>_legacy`, holding every row accepted before the end of the
-- current UTC day, and is dropped whole once that day is past retention. Later periods (of
-- MESSAGE_PARTITION_DAYS) get their own partitions, created ahead by the workers; a `<table>_default`
-- partition catches a row no period holds yet, and the workers move such rows when they create it.
--
-- The costs, on a large table: one scan to check the legacy rows fit their range, and one index build
-- (the primary key now holds the partition's column). Both run inside this migration's transaction,
-- which holds the table's lock meanwhile; see the operations page for building the index beforehand.
DROP TRIGGER messages_webhook_events ON messages;--> statement-breakpoint
ALTER TABLE messages RENAME TO messages_legacy;--> statement-breakpoint
-- Its key becomes (id, accepted_at), from the unique index built below.
ALTER TABLE messages_legacy DROP CONSTRAINT messages_pkey;--> statement-breakpoint
ALTER INDEX messages_accepted_at_idx RENAME TO messages_legacy_accepted_at_idx;--> statement-breakpoint
ALTER INDEX messages_api_key_accepted_at_idx RENAME TO messages_legacy_api_key_accepted_at_idx;--> statement-breakpoint
ALTER INDEX messages_api_key_batch_idx RENAME TO messages_legacy_api_key_batch_idx;--> statement-breakpoint
ALTER INDEX messages_api_key_status_accepted_at_idx RENAME TO messages_legacy_api_key_status_accepted_at_idx;--> statement-breakpoint
ALTER INDEX messages_api_key_updated_at_idx RENAME TO messages_legacy_api_key_updated_at_idx;--> statement-breakpoint
ALTER INDEX messages_client_reference_idx RENAME TO messages_legacy_client_reference_idx;--> statement-breakpoint
ALTER INDEX messages_failed_accepted_at_idx RENAME TO messages_legacy_failed_accepted_at_idx;--> statement-breakpoint
ALTER INDEX messages_phone_sent_at_idx RENAME TO messages_legacy_phone_sent_at_idx;--> statement-breakpoint
ALTER INDEX messages_user_id_sent_at_idx RENAME TO messages_legacy_user_id_sent_at_idx;--> statement-breakpoint
ALTER INDEX messages_redact_after_idx RENAME TO messages_legacy_redact_after_idx;--> statement-breakpoint
-- Unique across days is impossible on a partitioned table; the platform's ids are unique by nature.
DROP INDEX messages_platform_message_id_idx;--> statement-breakpoint
CREATE TABLE messages (LIKE messages_legacy INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (accepted_at);--> statement-breakpoint
ALTER TABLE messages ADD CONSTRAINT messages_id_accepted_at_pk PRIMARY KEY (id, accepted_at);--> statement-breakpoint
ALTER TABLE messages ADD CONSTRAINT messages_api_key_id_api_keys_id_fk FOREIGN KEY (api_key_id) REFERENCES api_keys(id);--> statement-breakpoint
CREATE INDEX messages_accepted_at_idx ON messages (accepted_at);--> statement-breakpoint
CREATE INDEX messages_api_key_accepted_at_idx ON messages (api_key_id, accepted_at);--> statement-breakpoint
CREATE INDEX messages_api_key_batch_idx ON messages (api_key_id, batch_id) WHERE batch_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX messages_api_key_status_accepted_at_idx ON messages (api_key_id, status, accepted_at);--> statement-breakpoint
CREATE INDEX messages_api_key_updated_at_idx ON messages (api_key_id, updated_at);--> statement-breakpoint
CREATE INDEX messages_client_reference_idx ON messages (client_reference, api_key_id) WHERE client_reference IS NOT NULL;--> statement-breakpoint
CREATE INDEX messages_failed_accepted_at_idx ON messages (accepted_at) WHERE status = 'failed';--> statement-breakpoint
CREATE INDEX messages_phone_sent_at_idx ON messages (phone, sent_at);--> statement-breakpoint
CREATE INDEX messages_user_id_sent_at_idx ON messages (user_id, sent_at) WHERE user_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX messages_platform_message_id_idx ON messages (platform_message_id) WHERE platform_message_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX messages_redact_after_idx ON messages (redact_after) WHERE redact_after IS NOT NULL AND redacted_at IS NULL;--> statement-breakpoint
-- The legacy table's indexes match the parent's and are attached as they are, but for the key's,
-- built here unless an operator built it beforehand, concurrently, under this name.
CREATE UNIQUE INDEX IF NOT EXISTS messages_legacy_id_accepted_at_idx ON messages_legacy (id, accepted_at);--> statement-breakpoint
ALTER TABLE messages_legacy ADD CONSTRAINT messages_legacy_pkey PRIMARY KEY USING INDEX messages_legacy_id_accepted_at_idx;--> statement-breakpoint

ALTER TABLE message_attempts RENAME TO message_attempts_legacy;--> statement-breakpoint
ALTER TABLE message_attempts_legacy DROP CONSTRAINT message_attempts_pkey;--> statement-breakpoint
ALTER INDEX message_attempts_created_at_idx RENAME TO message_attempts_legacy_created_at_idx;--> statement-breakpoint
ALTER INDEX message_attempts_message_id_idx RENAME TO message_attempts_legacy_message_id_idx;--> statement-breakpoint
CREATE TABLE message_attempts (LIKE message_attempts_legacy INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (created_at);--> statement-breakpoint
-- The id sequence belongs to the new table: dropping the legacy partition must not drop it.
ALTER SEQUENCE message_attempts_id_seq OWNED BY message_attempts.id;--> statement-breakpoint
ALTER TABLE message_attempts ADD CONSTRAINT message_attempts_id_created_at_pk PRIMARY KEY (id, created_at);--> statement-breakpoint
CREATE INDEX message_attempts_created_at_idx ON message_attempts (created_at);--> statement-breakpoint
CREATE INDEX message_attempts_message_id_idx ON message_attempts (message_id, created_at);--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS message_attempts_legacy_id_created_at_idx ON message_attempts_legacy (id, created_at);--> statement-breakpoint
ALTER TABLE message_attempts_legacy ADD CONSTRAINT message_attempts_legacy_pkey PRIMARY KEY USING INDEX message_attempts_legacy_id_created_at_idx;--> statement-breakpoint

DO $$
DECLARE
	v_cutoff timestamptz := (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
BEGIN
	EXECUTE format('ALTER TABLE messages ATTACH PARTITION messages_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cutoff);
	EXECUTE format('ALTER TABLE message_attempts ATTACH PARTITION message_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cutoff);
END $$;--> statement-breakpoint
CREATE TABLE messages_default PARTITION OF messages DEFAULT;--> statement-breakpoint
CREATE TABLE message_attempts_default PARTITION OF message_attempts DEFAULT;--> statement-breakpoint
-- Declared on the partitioned table, the trigger fires for every partition, present and future.
CREATE TRIGGER messages_webhook_events AFTER INSERT OR UPDATE OF status, attempts ON messages
	FOR EACH ROW EXECUTE FUNCTION dispatch_message_webhook_events();
