import { readFile } from 'node:fs/promises'
import { createTestDatabase } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'

// Migration 0004 split the requested tenant from the bound one. This runs its SQL on api_keys as
// they were before it (tenant_id holding whatever the requester asked for) and checks what each
// key is bound to afterwards.

const migration = new URL(
  '../../../../packages/db/drizzle/0004_api_key_requested_tenant.sql',
  import.meta.url,
)

let database: Awaited<ReturnType<typeof createTestDatabase>>
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database?.drop()
})

it('keeps the tenant of approved and revoked keys, and unbinds the ones never approved', async () => {
  const { sql } = database
  await sql`alter table api_keys drop column requested_tenant_id`
  const statuses = ['pending', 'approved', 'revoked', 'rejected'] as const
  for (const status of statuses) {
    for (const tenant of ['acme', null]) {
      await sql`
        insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, tenant_id, status)
        values (${`${status}-${tenant}`}, 'mdk_dev_xxxxxx', 'development', ${status}, 'ops@acme.test',
                ${['read:orders']}, ${tenant}, ${status})`
    }
  }

  for (const statement of (await readFile(migration, 'utf8')).split('--> statement-breakpoint')) {
    await sql.unsafe(statement)
  }

  const rows = await sql<
    { key_hash: string; requested_tenant_id: string | null; tenant_id: string | null }[]
  >`
    select key_hash, requested_tenant_id, tenant_id from api_keys order by key_hash collate "C"`
  expect(rows).toEqual([
    { key_hash: 'approved-acme', requested_tenant_id: 'acme', tenant_id: 'acme' },
    { key_hash: 'approved-null', requested_tenant_id: null, tenant_id: null },
    { key_hash: 'pending-acme', requested_tenant_id: 'acme', tenant_id: null },
    { key_hash: 'pending-null', requested_tenant_id: null, tenant_id: null },
    { key_hash: 'rejected-acme', requested_tenant_id: 'acme', tenant_id: null },
    { key_hash: 'rejected-null', requested_tenant_id: null, tenant_id: null },
    { key_hash: 'revoked-acme', requested_tenant_id: 'acme', tenant_id: 'acme' },
    { key_hash: 'revoked-null', requested_tenant_id: null, tenant_id: null },
  ])
})
