CREATE TABLE "message_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"message_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"outcome" text NOT NULL,
	"error_code" text NOT NULL,
	"error_message" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "message_attempts_message_id_idx" ON "message_attempts" USING btree ("message_id","created_at");--> statement-breakpoint
CREATE INDEX "message_attempts_created_at_idx" ON "message_attempts" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "webhook_attempts_failed_created_at_idx" ON "webhook_attempts" USING btree ("created_at") WHERE "webhook_attempts"."status_code" is null or "webhook_attempts"."status_code" not between 200 and 299;