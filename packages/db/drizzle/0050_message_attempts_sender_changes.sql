-- Issue 44: a pooled message's move off a number that left its pool's rotation is recorded on the
-- message's timeline table, whatever its key's webhook endpoints (its view and timelines read it):
-- a message_attempts row, outcome 'sender_changed', error_code the reason, naming the two senders.
-- Nullable, no default: no rewrite of the partitions, null on every attempt.
ALTER TABLE "message_attempts" ADD COLUMN "from_sender_id" text;--> statement-breakpoint
ALTER TABLE "message_attempts" ADD COLUMN "to_sender_id" text;
