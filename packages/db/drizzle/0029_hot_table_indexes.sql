-- Issue 46: every index on a table written per message earns its place (docs/operations.md, Postgres:
-- indexes and writes per message; packages/db/src/hot-indexes.ts lists each with the query it serves,
-- and a test fails on one not listed there). Each index here cost every insert an entry, and on
-- `messages` every status change too (status changes are not HOT updates since 0009).
--
-- Dropping an index of a partitioned table drops every partition's; partitions created later
-- (partitions.ts, `create table … partition of`) take the parent's set, so they lose it too. Each drop
-- takes its table's lock for a moment; nothing is built.
--
-- `messages (api_key_id, accepted_at)`: a key's list in acceptance order is read off
-- `messages_api_key_status_accepted_at_idx` instead, each status's range merged (message-list.ts),
-- and its count off that index's key prefix.
DROP INDEX "messages_api_key_accepted_at_idx";--> statement-breakpoint
-- `webhook_events (created_at)`: no query reads events by time alone; retention drops partitions.
DROP INDEX "webhook_events_created_at_idx";--> statement-breakpoint
-- `outbox.job_id` unique: a random UUID, never looked up; two entries per event (insert, dispatch).
ALTER TABLE "outbox" DROP CONSTRAINT "outbox_jobId_unique";
