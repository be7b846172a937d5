-- Issue 44, channel fallback: a sender's default fallback (`fallback`: the SMS and its `afterSeconds`),
-- carried by a send through it that has none when its key holds send:sms-fallback; and each SMS's
-- price as its provider reported it, with the message's campaign (`batch_id`) so a campaign sums
-- its SMS. docs/failover.md.
ALTER TABLE "message_fallbacks" ADD COLUMN "batch_id" uuid;--> statement-breakpoint
ALTER TABLE "message_fallbacks" ADD COLUMN "price" numeric(12, 5);--> statement-breakpoint
ALTER TABLE "message_fallbacks" ADD COLUMN "price_unit" text;--> statement-breakpoint
ALTER TABLE "senders" ADD COLUMN "default_fallback" jsonb;--> statement-breakpoint
CREATE INDEX "message_fallbacks_batch_id_idx" ON "message_fallbacks" USING btree ("batch_id") WHERE "message_fallbacks"."batch_id" is not null;