-- Hand-written: trigram search for `q` on orders, and the display-id formatter the defaults use.
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE OR REPLACE FUNCTION display_id(prefix text, n bigint) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT prefix || lpad(n::text, greatest(8, length(n::text)), '0') $$;--> statement-breakpoint
CREATE TYPE "public"."collaborator" AS ENUM('RESEARCH', 'LAB', 'CLINIC', 'BUSINESS');--> statement-breakpoint
CREATE TYPE "public"."external_elution_buffer" AS ENUM('DDH2O', 'TE_BUFFER', 'RNA_FREE_OR_DEPC', 'PURE_ETHANOL');--> statement-breakpoint
CREATE TYPE "public"."external_pipeline" AS ENUM('V2_5', 'V3_0');--> statement-breakpoint
CREATE TYPE "public"."external_sample_type" AS ENUM('STOOL', 'DNA', 'FASTQ');--> statement-breakpoint
CREATE TYPE "public"."external_species_type" AS ENUM('HUMAN', 'ANIMAL', 'BACTERIA');--> statement-breakpoint
CREATE TYPE "public"."external_tissue_nucleic_acid_type" AS ENUM('GENOMIC_DNA');--> statement-breakpoint
CREATE TYPE "public"."external_tissue_organ" AS ENUM('STOOL', 'SALIVA');--> statement-breakpoint
CREATE TYPE "public"."kit_status" AS ENUM('UNACTIVATED', 'SENT_OUT', 'ACTIVATED', 'KIT_RECEIVED', 'DNA_EXTRACTED', 'SEQUENCING', 'UNDER_SUPPORT', 'COMPLETED', 'FFQ_SURVEY_COMPLETED', 'ALIQUOTED');--> statement-breakpoint
CREATE TYPE "public"."ml_prefix" AS ENUM('KIT_ID', 'ANALYSIS_ID', 'EXTERNAL_ID');--> statement-breakpoint
CREATE TYPE "public"."order_status" AS ENUM('CANCELLED', 'PENDING', 'CONFIRMED', 'DELIVERING', 'DELIVERED', 'RETURNED', 'REFUNDED');--> statement-breakpoint
CREATE TYPE "public"."payment_status" AS ENUM('PAID', 'UNPAID', 'REFUNDED');--> statement-breakpoint
CREATE TYPE "public"."pdf_qc" AS ENUM('SUCCESS', 'FAILED');--> statement-breakpoint
CREATE TYPE "public"."product_type" AS ENUM('KIT', 'PROBIOTIC', 'BUNDLE');--> statement-breakpoint
CREATE TYPE "public"."report_status" AS ENUM('UNDER_SUPPORT', 'PUBLISHED', 'UNPUBLISHED');--> statement-breakpoint
CREATE TYPE "public"."report_type" AS ENUM('NONE', 'ASV', 'PDF', 'SCORE_TABLE', 'TAXA_TABLE', 'DISEASE_RISK');--> statement-breakpoint
CREATE TYPE "public"."timeline" AS ENUM('AMD', 'BME', 'RESEARCH', 'FMT', 'FFH');--> statement-breakpoint
CREATE SEQUENCE "public"."order_display_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE SEQUENCE "public"."product_display_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE SEQUENCE "public"."project_display_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "addresses" (
	"id" serial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"recipient" text,
	"line1" text,
	"line2" text,
	"city" text,
	"postal_code" text,
	"country" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "channels" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"auto_generate_kit" boolean DEFAULT false NOT NULL,
	"auto_create_order_from_survey_tool" boolean DEFAULT false NOT NULL,
	"send_bme_email" boolean DEFAULT false NOT NULL,
	"send_partner_email" boolean DEFAULT false NOT NULL,
	"timeline" timeline NOT NULL,
	"show_address_section" boolean DEFAULT false NOT NULL,
	"default_workflow_value" jsonb DEFAULT '{"sampleType":[],"ffq":false,"reibursement":false,"report":[],"collectionMedium":[]}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "discount_codes" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"order_id" uuid NOT NULL,
	"code" text NOT NULL,
	"amount" text NOT NULL,
	"type" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "kits" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"serial" text NOT NULL,
	"tenant_id" text NOT NULL,
	"order_id" uuid NOT NULL,
	"order_item_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"profile_id" text,
	"b2d_profile_name" text,
	"b2d_profile_name_data" jsonb,
	"analysis_id" text,
	"lab_id" text,
	"external_id" text,
	"activated" boolean DEFAULT false NOT NULL,
	"is_unassigned" boolean DEFAULT false NOT NULL,
	"is_survey_finished" boolean DEFAULT false NOT NULL,
	"krona_report_ready" boolean DEFAULT false NOT NULL,
	"b2c_score_ready" boolean DEFAULT false NOT NULL,
	"abun_score_ready" boolean DEFAULT false NOT NULL,
	"top10_bacteria_report_ready" boolean DEFAULT false NOT NULL,
	"kit_send_out" boolean DEFAULT false NOT NULL,
	"pdf_publish" boolean DEFAULT false NOT NULL,
	"is_aliquoted" boolean DEFAULT false NOT NULL,
	"activated_at" date,
	"sample_received_at" date,
	"kit_send_out_at" date,
	"completed_at" date,
	"kit_received_at" date,
	"survey_start_at" date,
	"status" "kit_status" DEFAULT 'UNACTIVATED' NOT NULL,
	"notes" text,
	"internal_survey_result_id" text,
	"is_ffq_survey_completion" text,
	"pdf_path" text,
	"survey_tool_response_id" text,
	"pdf_qc" "pdf_qc",
	"report_status" "report_status",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "kits_serial_unique" UNIQUE("serial")
);
--> statement-breakpoint
CREATE TABLE "order_idempotency_keys" (
	"api_key_id" uuid NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"order_id" uuid,
	"response" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "order_idempotency_keys_api_key_id_key_pk" PRIMARY KEY("api_key_id","key")
);
--> statement-breakpoint
CREATE TABLE "order_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"order_id" uuid NOT NULL,
	"product_id" uuid NOT NULL,
	"quantity" integer NOT NULL,
	"price" integer NOT NULL,
	"metadata" jsonb,
	"discount_allocations" jsonb
);
--> statement-breakpoint
CREATE TABLE "orders" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"display_id" text DEFAULT display_id('ORD-', nextval('order_display_id_seq')) NOT NULL,
	"tenant_id" text NOT NULL,
	"user_id" text NOT NULL,
	"channel_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"address_id" integer,
	"ordered_at" date NOT NULL,
	"order_status" "order_status" DEFAULT 'PENDING' NOT NULL,
	"payment_status" "payment_status" DEFAULT 'UNPAID' NOT NULL,
	"total" bigint NOT NULL,
	"tracking_number" text,
	"not_print_out" boolean DEFAULT false NOT NULL,
	"unregister_order" boolean DEFAULT false NOT NULL,
	"unregister_email_address" text,
	"actual_biome_order_id" text,
	"total_discounts" integer DEFAULT 0 NOT NULL,
	"notes" text,
	"is_solved_notes" boolean DEFAULT false NOT NULL,
	"id_tracking_special_order" text,
	"invoice_no" text,
	"partner_name" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	"search_text" text GENERATED ALWAYS AS (lower(display_id || ' ' || coalesce(invoice_no, '') || ' ' || coalesce(partner_name, '') || ' ' || coalesce(tracking_number, ''))) STORED NOT NULL,
	CONSTRAINT "orders_displayId_unique" UNIQUE("display_id")
);
--> statement-breakpoint
CREATE TABLE "products" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"display_id" text DEFAULT display_id('PRD-', nextval('product_display_id_seq')) NOT NULL,
	"tenant_id" text NOT NULL,
	"channel_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"stock" integer NOT NULL,
	"price" integer NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"image" text,
	"product_type" "product_type" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "products_displayId_unique" UNIQUE("display_id"),
	CONSTRAINT "products_stock_non_negative" CHECK ("products"."stock" >= 0),
	CONSTRAINT "products_price_non_negative" CHECK ("products"."price" >= 0)
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"display_id" text DEFAULT display_id('PRJ-', nextval('project_display_id_seq')) NOT NULL,
	"tenant_id" text NOT NULL,
	"channel_id" uuid NOT NULL,
	"name" text NOT NULL,
	"clinic_code" text,
	"address_id" integer,
	"principal_investigator_name" text,
	"survey_tool_survey_id" text[] DEFAULT '{}' NOT NULL,
	"workflow" jsonb DEFAULT '{"sampleType":[],"ffq":false,"reibursement":false,"report":[],"collectionMedium":[]}'::jsonb NOT NULL,
	"external_research_project_id" text,
	"survey_collection_id" text,
	"vendor_pic" text,
	"is_partner_email_d2d31_trigger" boolean DEFAULT false NOT NULL,
	"is_partner_email_d4_trigger" boolean DEFAULT false NOT NULL,
	"organization_name" text,
	"collaborator" "collaborator",
	"external_sample_type" "external_sample_type",
	"external_species_type" "external_species_type",
	"external_tissue_nucleic_acid_type" "external_tissue_nucleic_acid_type",
	"external_tissue_organ" "external_tissue_organ",
	"external_elution_buffer" "external_elution_buffer",
	"external_pipeline" "external_pipeline",
	"external_output_type" "report_type"[] DEFAULT '{}' NOT NULL,
	"pdf_template_name" text,
	"external_sequencing_type_id" text,
	"external_have_sent_b1" boolean DEFAULT false NOT NULL,
	"external_have_sent_b2" boolean DEFAULT false NOT NULL,
	"external_email" text,
	"input_ml_prefix" "ml_prefix",
	"output_ml_prefix" "ml_prefix",
	"prefix" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "projects_displayId_unique" UNIQUE("display_id")
);
--> statement-breakpoint
ALTER TABLE "discount_codes" ADD CONSTRAINT "discount_codes_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kits" ADD CONSTRAINT "kits_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kits" ADD CONSTRAINT "kits_order_item_id_order_items_id_fk" FOREIGN KEY ("order_item_id") REFERENCES "public"."order_items"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kits" ADD CONSTRAINT "kits_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "order_idempotency_keys" ADD CONSTRAINT "order_idempotency_keys_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "order_idempotency_keys" ADD CONSTRAINT "order_idempotency_keys_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "order_items" ADD CONSTRAINT "order_items_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "order_items" ADD CONSTRAINT "order_items_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "public"."products"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_address_id_addresses_id_fk" FOREIGN KEY ("address_id") REFERENCES "public"."addresses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "products" ADD CONSTRAINT "products_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_address_id_addresses_id_fk" FOREIGN KEY ("address_id") REFERENCES "public"."addresses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "channels_created_at_idx" ON "channels" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "discount_codes_order_id_idx" ON "discount_codes" USING btree ("order_id","id");--> statement-breakpoint
CREATE INDEX "kits_order_item_id_idx" ON "kits" USING btree ("order_item_id");--> statement-breakpoint
CREATE INDEX "kits_order_id_idx" ON "kits" USING btree ("order_id");--> statement-breakpoint
CREATE INDEX "kits_tenant_created_at_idx" ON "kits" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "kits_project_id_idx" ON "kits" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "order_items_order_id_idx" ON "order_items" USING btree ("order_id");--> statement-breakpoint
CREATE INDEX "order_items_product_id_idx" ON "order_items" USING btree ("product_id");--> statement-breakpoint
CREATE INDEX "orders_tenant_ordered_idx" ON "orders" USING btree ("tenant_id","ordered_at","created_at","id") WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX "orders_tenant_project_ordered_idx" ON "orders" USING btree ("tenant_id","project_id","ordered_at","created_at","id") WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX "orders_search_trgm_idx" ON "orders" USING gin ("search_text" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "products_tenant_created_at_idx" ON "products" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "products_channel_id_idx" ON "products" USING btree ("channel_id");--> statement-breakpoint
CREATE INDEX "projects_tenant_created_at_idx" ON "projects" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "projects_channel_id_idx" ON "projects" USING btree ("channel_id");