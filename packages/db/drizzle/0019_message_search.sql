-- An admin's search by clientReference across every key (issue 24): the reference's index now leads with the
-- reference, so it serves that search and the key's own (both columns equal) alike; why, and its write cost (none
-- added: it replaces the old one): packages/db/src/schema/messages.ts and docs/benchmarks.md (Message search at 10 M).
-- The new index is built before the old one is dropped, so the key's search is never left without one. A plain
-- CREATE INDEX blocks writes to messages while it builds (about 10–20 s at 10 M rows on the development VM); on a
-- large table, build it first with CREATE INDEX CONCURRENTLY under this name, and this migration skips it.
CREATE INDEX IF NOT EXISTS "messages_client_reference_idx" ON "messages" USING btree ("client_reference","api_key_id") WHERE "messages"."client_reference" is not null;--> statement-breakpoint
DROP INDEX IF EXISTS "messages_api_key_client_reference_idx";
