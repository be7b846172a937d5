ALTER TABLE "outbox" ADD COLUMN "job_id" uuid DEFAULT gen_random_uuid() NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_jobId_unique" UNIQUE("job_id");