-- Issue 44: the SMS of a channel fallback without `afterSeconds` is kept with the message's sent
-- record rather than in a Redis string per message (its 131026 hold): a status webhook reporting
-- 131026 reads it here. Content: redaction and erasure null it. Nullable, no default: no rewrite of
-- the partitions, null for every message without such a fallback.
ALTER TABLE "messages" ADD COLUMN "sms_fallback_text" text;
