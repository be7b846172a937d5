import { readFile } from 'node:fs/promises'
import { createDb, createPeriodAt, HOT_TABLE_INDEXES, HOT_TABLES, listPartitions } from '@dispatch/db'
import { createTestDatabase } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Issue 46: every index on a table written per message is argued for (the query it serves, what it
// costs) in packages/db/src/hot-indexes.ts and docs/redis-and-postgres.md. An index added by a migration and
// not listed there fails here: it costs every message an entry, so it must be listed with its query.

const DOC = new URL('../../../../docs/redis-and-postgres.md', import.meta.url)
const HEADING = '## Postgres: indexes and writes per message'

let database: Awaited<ReturnType<typeof createTestDatabase>>

beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database?.drop()
})

/** The indexes of a migrated database on the tables written per message, as `table.index`. */
async function migratedIndexes() {
  const rows = await database.sql<{ table: string; index: string }[]>`
    select tablename as table, indexname as index from pg_indexes
    where schemaname = 'public' and tablename in ${database.sql([...HOT_TABLES])}`
  return rows.map((r) => `${r.table}.${r.index}`).sort()
}

const listed = HOT_TABLE_INDEXES.map((i) => `${i.table}.${i.index}`).sort()

describe('the indexes of the tables a message writes', () => {
  it('are exactly those listed, each with the query it serves', async () => {
    const found = await migratedIndexes()
    const unlisted = found.filter((name) => !listed.includes(name))
    const gone = listed.filter((name) => !found.includes(name))
    expect(unlisted, 'indexes no entry of packages/db/src/hot-indexes.ts argues for').toEqual([])
    expect(gone, 'entries of hot-indexes.ts no migration creates').toEqual([])
    for (const entry of HOT_TABLE_INDEXES) expect(entry.serves.length, entry.index).toBeGreaterThan(10)
  })

  it('find an index a migration would add unargued', async () => {
    await database.sql`create index messages_unargued_idx on messages (type)`
    try {
      const found = await migratedIndexes()
      expect(found.filter((name) => !listed.includes(name))).toEqual(['messages.messages_unargued_idx'])
    } finally {
      await database.sql`drop index messages_unargued_idx`
    }
  })

  it('are each a row of the table in docs/redis-and-postgres.md, and no other index is', async () => {
    const doc = await readFile(DOC, 'utf8')
    const start = doc.indexOf(HEADING)
    expect(start, `docs/redis-and-postgres.md has "${HEADING}"`).toBeGreaterThanOrEqual(0)
    const next = doc.indexOf('\n## ', start + HEADING.length)
    const section = doc.slice(start, next < 0 ? undefined : next)
    const rows = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1] as string)
    const names = HOT_TABLE_INDEXES.map((i) => i.index)
    expect(
      names.filter((name) => !rows.includes(name)),
      'indexes missing from the doc',
    ).toEqual([])
    expect(
      rows.filter((name) => !names.includes(name)),
      'rows for indexes that are not kept',
    ).toEqual([])
  })

  it('are the same on a period created later, whose indexes are the parent’s', async () => {
    const db = createDb(database.url, { max: 1 })
    try {
      // A period far ahead: created as the workers create one (partitions.ts).
      const at = Date.UTC(2031, 0, 15)
      for (const table of ['messages', 'webhook_events', 'inbound_messages'] as const) {
        await createPeriodAt(db.sql, table, at)
        const partition = (await listPartitions(db.sql, table)).find(
          (p) => p.from !== null && p.from.getTime() <= at && p.to !== null && p.to.getTime() > at,
        )
        expect(partition, `a ${table} period holding ${new Date(at).toISOString()}`).toBeDefined()
        const rows = await database.sql<{ parent: string }[]>`
          select parent.relname as parent from pg_index x
          join pg_class child on child.oid = x.indexrelid
          join pg_inherits i on i.inhrelid = child.oid
          join pg_class parent on parent.oid = i.inhparent
          where x.indrelid = ${partition?.name ?? ''}::regclass`
        expect(
          rows.map((r) => r.parent).sort(),
          `${partition?.name}: an index for each of ${table}'s`,
        ).toEqual(
          HOT_TABLE_INDEXES.filter((i) => i.table === table)
            .map((i) => i.index)
            .sort(),
        )
      }
    } finally {
      await db.close()
    }
  })
})
