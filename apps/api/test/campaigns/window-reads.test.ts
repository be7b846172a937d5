import { assignWindow, createDb } from '@dispatch/db'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'

/**
 * A window of a big audience, kept as an upload keeps it (blocks of 50 lines), far into it: the
 * feeder reads and expands that window's part of the audience only, whatever Postgres' statistics
 * say. They said nothing of the campaign here (analyzed with another campaign's rows only, before
 * its audience was written, as an audience just uploaded is): the blocks' expansion then scanned the campaign from its first line,
 * a window costing more the further the campaign had gone (0.3 s at line 900,000 of a million).
 */

const LINES = 100_000
let world: TestWorld
let client: ReturnType<typeof createDb>
let campaignId: string

beforeAll(async () => {
  world = await createWorld()
  client = createDb(world.databaseUrl, { max: 1 })
  const [key] = await world.sql<{ id: string }[]>`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, status)
    values ('window-reads', 'mdk_test', 'development', 'window', 'window@dispatch.local', '{send:template}', 'approved')
    returning id`
  const audience = { rows: LINES, taken: LINES, skipped: 0, skippedByReason: {}, format: 'csv' }
  // Far in: every line before FED_THROUGH fed already (still blocks here: the feeder never reads
  // them again, so what they hold does not matter to it).
  const [campaign] = await world.sql<{ id: string }[]>`
    insert into campaigns (api_key_id, sender_id, name, template, status, audience, started_at,
      fed_through, confirmed_through, fed_rows)
    values (${key?.id as string}, 'default', 'window', '{"templateId":"order_shipped","language":"pt_BR"}',
      'running', ${world.sql.json(audience)}, now(), ${FED_THROUGH}, ${FED_THROUGH}, ${FED_THROUGH - 1})
    returning id`
  campaignId = campaign?.id as string
  // Statistics of another campaign's audience only (20,000 rows sent), as on a service that ran
  // one before this one's upload.
  const [earlier] = await world.sql<{ id: string }[]>`
    insert into campaigns (api_key_id, sender_id, name, template, status, audience)
    values (${key?.id as string}, 'default', 'earlier', '{"templateId":"order_shipped","language":"pt_BR"}',
      'completed', ${world.sql.json(audience)})
    returning id`
  await world.sql`
    insert into campaign_recipients (campaign_id, line, phone, variables, state)
    select ${earlier?.id as string}::uuid, i + 1, '+5521900' || lpad(i::text, 6, '0'), '{}', 'fed'
    from generate_series(1, 20000) i`
  await world.sql`analyze campaign_recipients`
  await world.sql`
    insert into campaign_recipients (campaign_id, line, state, lines, block, block_fields)
    select ${campaignId}::uuid, b * 50 + 2, 'pending', 50,
      (select string_agg('+5511' || (900000000 + g)::text || ',Ana,BR-' || g, E'\n' order by g)
        from generate_series(b * 50, b * 50 + 49) as g),
      '{phone,1,2}'::text[]
    from generate_series(0, ${LINES / 50 - 1}) as b`
})

afterAll(async () => {
  await client?.close()
  await world?.close()
})

const FED_THROUGH = 95_001

it("reads only the window's part of an audience kept in blocks, however far the campaign is", async () => {
  // The rows the window's statements fetched through the audience's key, counted in the transaction.
  const { rows, indexTuples } = await client.db.transaction(async (tx) => {
    const fed = await assignWindow(tx as unknown as typeof client.db, campaignId, 1000, new Date())
    const [read] = await tx.execute<{ n: number }>(sql`
      select coalesce(sum(idx_tup_fetch), 0)::int as n from pg_stat_xact_user_tables
      where relname like 'campaign_recipients%'`)
    return { rows: fed, indexTuples: read?.n ?? 0 }
  })
  expect(rows.map((r) => r.line)).toEqual(Array.from({ length: 1000 }, (_, i) => FED_THROUGH + 1 + i))
  expect(rows[0]).toMatchObject({ phone: `+5511${900_000_000 + FED_THROUGH - 1}` })
  // The window's 1,000 lines twice (read, then marked `fed`), its 20 blocks and the items just past
  // it (2,120 here): not the 1,900 blocks before it too (4,100 when they were scanned).
  expect(indexTuples).toBeLessThan(2500)
})
