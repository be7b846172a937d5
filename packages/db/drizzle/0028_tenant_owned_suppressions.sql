ALTER TABLE "suppressions" ADD COLUMN "tenant_id" text;--> statement-breakpoint
ALTER TABLE "suppressions" ADD COLUMN "api_key_id" uuid;--> statement-breakpoint
ALTER TABLE "suppressions" ADD COLUMN "owner" text GENERATED ALWAYS AS (case when api_key_id is null then '' when tenant_id is not null then 'tenant:' || tenant_id else 'key:' || api_key_id::text end) STORED NOT NULL;--> statement-breakpoint
-- Entries keys added before owners were recorded: owned by the key's tenant (or the key, without one).
-- An entry a keyword later widened kept its `api` source, and stays the key's.
UPDATE "suppressions" s SET "api_key_id" = k."id", "tenant_id" = k."tenant_id"
  FROM "api_keys" k
  WHERE s."source" = 'api' AND s."created_by" = 'key:' || k."id"::text;--> statement-breakpoint
DROP INDEX "suppressions_number_recipient_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "suppressions_number_recipient_owner_idx" ON "suppressions" USING btree ("phone_number_id","recipient","owner");--> statement-breakpoint
CREATE INDEX "suppressions_owner_created_at_idx" ON "suppressions" USING btree ("owner","created_at");
