-- Issue 44: a sender's default channel fallback (`fallback`: the SMS and its `afterSeconds`), carried
-- by a send through it that has none when its key holds send:sms-fallback. docs/failover.md.
ALTER TABLE "senders" ADD COLUMN "default_fallback" jsonb;
