-- Issue 43: a CSV upload's taken plain lines kept in blocks (campaign_recipients.lines, block,
-- block_fields), a row per about fifty lines.
ALTER TABLE "campaign_recipients" ADD COLUMN "lines" integer;--> statement-breakpoint
ALTER TABLE "campaign_recipients" ADD COLUMN "block" text;--> statement-breakpoint
ALTER TABLE "campaign_recipients" ADD COLUMN "block_fields" text[];--> statement-breakpoint
-- A block: the lines of consecutive taken rows of a CSV upload as they came, `block_fields`
-- naming each field ('phone', a variable, or '' for a field not kept). One row per about fifty
-- lines instead of a row each: Postgres' work for a plain upload's rows was 2.4× a bare COPY of
-- the file (bench:campaign-upload). A block is expanded into a row per line when fed, canceled
-- or erased; these read its lines.
CREATE FUNCTION "dispatch_campaign_block_rows"("block" text, "fields" text[])
RETURNS TABLE ("n" integer, "phone" text, "variables" text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT t.n::integer,
    btrim(s.f[array_position(fields, 'phone')], ' '),
    json_object(k.names, array(SELECT s.f[i] FROM unnest(k.at) AS i))::text
  FROM (SELECT coalesce(array_agg(c.name ORDER BY c.i), '{}') AS names,
          coalesce(array_agg(c.i::integer ORDER BY c.i), '{}') AS at
        FROM unnest(fields) WITH ORDINALITY AS c(name, i) WHERE c.name NOT IN ('', 'phone')) AS k,
    string_to_table(block, E'\n') WITH ORDINALITY AS t(text, n),
    LATERAL (SELECT string_to_array(rtrim(t.text, E'\r'), ',') AS f) AS s
$$;--> statement-breakpoint
-- Every line of every audience, its block expanded (for operators and tests; the API reads a
-- page of them off the key, queries/campaign-audience-blocks.ts).
CREATE VIEW "campaign_recipient_lines" AS
  SELECT r.campaign_id, r.line + coalesce(e.n - 1, 0) AS line, coalesce(e.phone, r.phone) AS phone,
    r.user_id, coalesce(e.variables, r.variables) AS variables, r.state, r.reason, r.detail, r.raw,
    r.message_id, r.error_code
  FROM campaign_recipients r LEFT JOIN LATERAL dispatch_campaign_block_rows(r.block, r.block_fields) e ON true;
