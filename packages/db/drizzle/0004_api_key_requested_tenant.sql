ALTER TABLE "api_keys" ADD COLUMN "requested_tenant_id" text;--> statement-breakpoint
-- Until now the requested tenant was stored as the key's tenant. Keep what was asked for, on every row.
UPDATE "api_keys" SET "requested_tenant_id" = "tenant_id";--> statement-breakpoint
-- A key never approved (pending or rejected) had its tenant only requested: no admin bound it.
-- Approved and revoked keys keep theirs.
UPDATE "api_keys" SET "tenant_id" = NULL WHERE "status" IN ('pending', 'rejected');
