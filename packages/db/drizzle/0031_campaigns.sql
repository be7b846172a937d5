CREATE TYPE "public"."campaign_recipient_state" AS ENUM('pending', 'fed', 'skipped', 'canceled');--> statement-breakpoint
CREATE TYPE "public"."campaign_status" AS ENUM('draft', 'ready', 'scheduled', 'running', 'paused', 'completed', 'canceled');--> statement-breakpoint
CREATE TABLE "campaign_recipients" (
	"campaign_id" uuid NOT NULL,
	"line" integer NOT NULL,
	"phone" text,
	"user_id" text,
	"variables" jsonb,
	"state" "campaign_recipient_state" NOT NULL,
	"reason" text,
	"detail" text,
	"raw" text,
	"message_id" uuid,
	"error_code" text,
	CONSTRAINT "campaign_recipients_campaign_id_line_pk" PRIMARY KEY("campaign_id","line")
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"api_key_id" uuid NOT NULL,
	"tenant_id" text,
	"sender_id" text NOT NULL,
	"name" text NOT NULL,
	"template" jsonb NOT NULL,
	"status" "campaign_status" DEFAULT 'draft' NOT NULL,
	"start_at" timestamp with time zone,
	"validity_seconds" integer,
	"quiet_hours" jsonb,
	"audience" jsonb,
	"fed_through" integer DEFAULT 0 NOT NULL,
	"confirmed_through" integer DEFAULT 0 NOT NULL,
	"progress_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"canceled_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "campaign_recipients" ADD CONSTRAINT "campaign_recipients_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "campaigns_api_key_id_created_at_idx" ON "campaigns" USING btree ("api_key_id","created_at");--> statement-breakpoint
CREATE INDEX "campaigns_status_idx" ON "campaigns" USING btree ("status");