CREATE TABLE "suppressions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"phone_number_id" text NOT NULL,
	"sender_id" text NOT NULL,
	"recipient" text NOT NULL,
	"scope" text NOT NULL,
	"source" text NOT NULL,
	"reason" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "suppressions_number_recipient_idx" ON "suppressions" USING btree ("phone_number_id","recipient");--> statement-breakpoint
CREATE INDEX "suppressions_sender_created_at_idx" ON "suppressions" USING btree ("sender_id","created_at");