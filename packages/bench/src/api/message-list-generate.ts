import { Scopes } from '@dispatch/contracts'
import { generateApiKey } from '@dispatch/db'
import type postgres from 'postgres'

const BATCH = 500_000
/** Batches written at once, on as many connections: one per core of the development VM. */
const PARALLEL = 2
/** The generated messages span this many days, ending now. */
export const SPAN_DAYS = 90

/** An approved key with every scope. */
export async function createBenchKey(sql: postgres.Sql, clientName: string) {
  const { key, keyHash, keyPrefix } = generateApiKey('development')
  const [row] = await sql`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, status)
    values (${keyHash}, ${keyPrefix}, 'development', ${clientName}, 'bench@dispatch.local',
            ${`{${Object.values(Scopes).join(',')}}`}::text[], 'approved')
    returning id`
  return { key, id: row?.id as string }
}

/**
 * Of every 100 messages: 55 read, 25 delivered, 10 sent, 5 failed, and one each of scheduled,
 * queued, sending, expired and canceled. Rare statuses are the ones a filter must find without
 * reading through the common ones.
 */
export const STATUS = `(case when i % 100 < 55 then 'read' when i % 100 < 80 then 'delivered'
  when i % 100 < 90 then 'sent' when i % 100 < 95 then 'failed' when i % 100 = 95 then 'scheduled'
  when i % 100 = 96 then 'queued' when i % 100 = 97 then 'sending' when i % 100 = 98 then 'expired'
  else 'canceled' end)::message_status`
export const TYPE = `(case when i % 20 < 12 then 'text' when i % 20 < 19 then 'template' else 'image' end)::message_type`

/**
 * One batch, set-based: messages `lo`…`hi` of `total`, accepted evenly over the last SPAN_DAYS
 * days (oldest first) and left as the worker and the webhooks leave them: types 60 % text, 35 %
 * template, 5 % image, each with a body of its type's size; a million phones (ten messages each per
 * 10 M); a client reference on every other message; one in ten in a batch of 1,000; times that
 * follow the status. `$5` (the salt) keeps keys' platform ids and references apart.
 */
const INSERT_BATCH = `
  insert into messages (id, api_key_id, type, phone, payload, client_reference, sender_phone_number_id, status,
    attempts, platform_message_id, last_error_code, last_error_message, batch_id, accepted_at, send_at, sent_at,
    delivered_at, read_at, failed_at, expired_at, canceled_at, updated_at)
  select gen_random_uuid(), $1::uuid, t, '+5511' || (10000000 + (i::bigint * 7919) % 1000000)::text,
    case t when 'text' then '{"text":"Your code is 123456"}'::jsonb
      when 'template' then '{"templateId":"order_shipped","language":"pt_BR","variables":{"1":"Ana","2":"BR-1042"}}'::jsonb
      else '{"image":{"mediaId":"media-456","text":"Your invoice"}}'::jsonb end,
    case when i % 2 = 0 then 'ref-' || $5 || '-' || i end, '106540352242922', s,
    case when s in ('scheduled', 'queued', 'expired', 'canceled') then 0 when s = 'failed' then 3 else 1 end,
    case when s in ('sent', 'delivered', 'read') then 'wamid.' || $5 || '.' || i end,
    case when s = 'failed' then '131026' end, case when s = 'failed' then 'Message undeliverable' end,
    case when i % 10 = 0 then md5($5 || '-batch-' || (i / 10000))::uuid end,
    a, case when s = 'scheduled' then a + interval '1 day' end,
    case when s in ('sent', 'delivered', 'read') then a + interval '1 second' end,
    case when s in ('delivered', 'read') then a + interval '3 seconds' end,
    case when s = 'read' then a + interval '40 seconds' end,
    case when s = 'failed' then a + interval '5 seconds' end,
    case when s = 'expired' then a + interval '1 hour' end,
    case when s = 'canceled' then a + interval '10 minutes' end,
    a + case s when 'read' then interval '40 seconds' when 'delivered' then interval '3 seconds'
      when 'sent' then interval '1 second' when 'failed' then interval '5 seconds'
      when 'expired' then interval '1 hour' when 'canceled' then interval '10 minutes' else interval '0' end
  from (
    select i, ${STATUS} as s, ${TYPE} as t, $4::timestamptz + (i * $6::float8) * interval '1 microsecond' as a
    from generate_series($2::int, $3::int) i
  ) src`

/**
 * Writes `total` messages for a key, PARALLEL batches at a time (triggers and foreign-key checks
 * off, as for a restore: `session_replication_role`), calling `onProgress` after each batch.
 */
export async function generateMessages(
  sql: postgres.Sql,
  apiKeyId: string,
  total: number,
  salt: string,
  onProgress: (done: number) => void,
) {
  const start = new Date(Date.now() - SPAN_DAYS * 86_400_000).toISOString()
  const stepMicros = (SPAN_DAYS * 86_400_000_000) / total
  const batches: [number, number][] = []
  for (let lo = 1; lo <= total; lo += BATCH) batches.push([lo, Math.min(total, lo + BATCH - 1)])
  let done = 0
  const loader = async () => {
    for (let next = batches.shift(); next; next = batches.shift()) {
      const [lo, hi] = next
      await sql.begin(async (tx) => {
        await tx`set local session_replication_role = replica`
        await tx.unsafe(INSERT_BATCH, [apiKeyId, lo, hi, start, salt, stepMicros])
      })
      done += hi - lo + 1
      onProgress(done)
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, loader))
}

/**
 * Runs `load` with the `messages` table bare (no primary key, no index), then builds every index
 * the migrations define (read from the catalog first, so the ones measured are the schema's own):
 * an index built once over the loaded rows costs far less than one maintained row by row.
 */
export async function withoutMessageIndexes(sql: postgres.Sql, load: () => Promise<void>) {
  // On the partitioned table (migration 0023) the catalog shows each index as `ON ONLY messages`,
  // which alone makes an index of the parent without its partitions': built without `ONLY`, each
  // covers every partition. The primary key is re-added by its definition.
  const indexes = await sql<{ name: string; definition: string }[]>`
    select indexname as name, replace(indexdef, ' ON ONLY ', ' ON ') as definition from pg_indexes
    where schemaname = 'public' and tablename = 'messages' order by indexname`
  const [pkey] = await sql<{ name: string; definition: string }[]>`
    select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint
    where conrelid = 'messages'::regclass and contype = 'p'`
  if (pkey) await sql.unsafe(`alter table messages drop constraint "${pkey.name}"`)
  for (const { name } of indexes) await sql.unsafe(`drop index if exists "${name}"`)
  await load()
  await sql.begin(async (tx) => {
    await tx`set local maintenance_work_mem = '1GB'`
    for (const { name, definition } of indexes) {
      const started = performance.now()
      if (name === pkey?.name)
        await tx.unsafe(`alter table messages add constraint "${name}" ${pkey.definition}`)
      else await tx.unsafe(definition)
      console.log(`  index ${name}: ${((performance.now() - started) / 1000).toFixed(0)} s`)
    }
  })
}
