-- Issue 44, the lists' channel=sms and fallback=<states>: read from message_fallbacks newest first (a
-- key's, and across keys), each fallback's message found by its primary key in its period, instead of
-- an EXISTS per message that read every row of the key to find the few with a fallback.
-- Written once per fallback only. docs/benchmarks-paths.md (Lists by channel and fallback).
CREATE INDEX "message_fallbacks_api_key_accepted_at_idx" ON "message_fallbacks" USING btree ("api_key_id","accepted_at","message_id");--> statement-breakpoint
CREATE INDEX "message_fallbacks_accepted_at_idx" ON "message_fallbacks" USING btree ("accepted_at","message_id");