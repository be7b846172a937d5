CREATE TABLE "sender_pool_members" (
	"pool_id" uuid NOT NULL,
	"sender_id" text NOT NULL,
	"position" integer NOT NULL,
	"weight" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "sender_pool_members_pool_id_sender_id_pk" PRIMARY KEY("pool_id","sender_id"),
	CONSTRAINT "sender_pool_members_position_key" UNIQUE("pool_id","position"),
	CONSTRAINT "sender_pool_members_weight_check" CHECK ("sender_pool_members"."weight" between 1 and 1000),
	CONSTRAINT "sender_pool_members_position_check" CHECK ("sender_pool_members"."position" >= 0)
);
--> statement-breakpoint
CREATE TABLE "sender_pools" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "sender_pool_id" uuid;--> statement-breakpoint
ALTER TABLE "sender_pool_members" ADD CONSTRAINT "sender_pool_members_pool_id_sender_pools_id_fk" FOREIGN KEY ("pool_id") REFERENCES "public"."sender_pools"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sender_pool_members" ADD CONSTRAINT "sender_pool_members_sender_id_senders_id_fk" FOREIGN KEY ("sender_id") REFERENCES "public"."senders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sender_pool_members_sender_id_idx" ON "sender_pool_members" USING btree ("sender_id");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_sender_pool_id_sender_pools_id_fk" FOREIGN KEY ("sender_pool_id") REFERENCES "public"."sender_pools"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_sender_pool_id_idx" ON "api_keys" USING btree ("sender_pool_id") WHERE "api_keys"."sender_pool_id" is not null;