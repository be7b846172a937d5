-- Failed-message admin and incident switches (issue 14): the admins' audit log, the queue switches, an admin's
-- retries on messages, and the two indexes the admins' list across every key needs (measured in
-- docs/operations-incidents.md). A plain CREATE INDEX blocks writes to messages while it builds; on a large table,
-- build them first with CREATE INDEX CONCURRENTLY under these names, and this migration skips them.
CREATE TABLE "admin_audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "queue_controls" (
	"name" text PRIMARY KEY NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"actor" text NOT NULL,
	"reason" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "retry_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "retried_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "admin_audit_log_target_idx" ON "admin_audit_log" USING btree ("target_type","target_id","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_accepted_at_idx" ON "messages" USING btree ("accepted_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "messages_failed_accepted_at_idx" ON "messages" USING btree ("accepted_at") WHERE "messages"."status" = 'failed';
