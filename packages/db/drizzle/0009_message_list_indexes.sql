-- The message list (GET /api/third-party/messages); why each index, and its write cost: packages/db/src/schema/messages.ts
-- and docs/messaging.md (Listing messages). A plain CREATE INDEX blocks writes to messages while it builds (10–30 s
-- per index at 10 M rows); on a large table, build them first with CREATE INDEX CONCURRENTLY under these names, and
-- this migration skips them.
CREATE INDEX IF NOT EXISTS "messages_api_key_status_accepted_at_idx" ON "messages" USING btree ("api_key_id","status","accepted_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_api_key_updated_at_idx" ON "messages" USING btree ("api_key_id","updated_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_api_key_client_reference_idx" ON "messages" USING btree ("api_key_id","client_reference") WHERE "messages"."client_reference" is not null;
