import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createDb, type DbClient, decideApiKey, generateApiKey, insertApiKey } from '@dispatch/db'
import { ConfigError } from '@dispatch/runtime/env'
import { createTestDatabase, testQueuePrefix, testRedisUrl, waitFor } from '@dispatch/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createWorkerLogger, parseWorkerConfig, type RunningWorker, startWorker } from '../src/index.ts'

let database: Awaited<ReturnType<typeof createTestDatabase>>
let client: DbClient
const dirs: string[] = []
const workers: RunningWorker[] = []
beforeAll(async () => {
  database = await createTestDatabase()
  client = createDb(database.url, { max: 2 })
})
// Every worker of a test stops with it: a relay left running would relay the next test's rows.
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.close()
})
afterAll(async () => {
  await client?.close()
  await database?.drop()
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

const mailDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dispatch-mail-'))
  dirs.push(dir)
  return dir
}

const start = async (env: Record<string, string>) => {
  const config = parseWorkerConfig({
    DATABASE_URL: database.url,
    REDIS_URL: testRedisUrl(),
    OUTBOX_POLL_MS: '50',
    EMAIL_BACKOFF_MS: '20',
    LOG_LEVEL: 'silent',
    ...env,
  })
  expect(config.SMTP_URL).toBeUndefined()
  const worker = await startWorker(config, createWorkerLogger(config))
  workers.push(worker)
  return worker
}

/** A key requested and approved straight in the database: one outbox row waiting for the relay. */
async function approvedKey(email: string, clientName: string) {
  const { keyHash, keyPrefix } = generateApiKey('development')
  const key = await insertApiKey(client.db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName,
    email,
    scopes: ['send:free-text'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
  const result = await decideApiKey(client.db, {
    id: key.id,
    decision: 'approve',
    actor: 'ana',
    reason: null,
    now: new Date(),
  })
  expect(result.outcome).toBe('decided')
  const [row] = await database.sql<{ id: string }[]>`
    select id from outbox where payload->'data'->>'keyId' = ${key.id}`
  if (!row) throw new Error('no outbox row for the decision')
  return { key, outboxId: Number(row.id) }
}

const emlFiles = async (dir: string) => (await readdir(dir)).filter((f) => f.endsWith('.eml'))
const delivery = async (outboxId: number) => {
  const [row] = await database.sql`select * from email_deliveries where outbox_id = ${outboxId}`
  return row
}
const dispatchedAt = async (outboxId: number) => {
  const [row] = await database.sql`select dispatched_at from outbox where id = ${outboxId}`
  return row?.dispatched_at as Date | null | undefined
}

describe('without SMTP_URL', () => {
  it('writes each e-mail as an .eml file in MAIL_DIR and records it as sent', async () => {
    const dir = await mailDir()
    const { outboxId } = await approvedKey('folder@acme.test', 'Folder Co')
    await start({ QUEUE_PREFIX: testQueuePrefix(), MAIL_DIR: dir })

    const [file] = await waitFor(
      async () => {
        const files = await emlFiles(dir)
        return files.length > 0 && files
      },
      { what: 'an .eml file' },
    )
    expect(file).toContain(`outbox-${outboxId}`)
    const eml = await readFile(join(dir, file as string), 'utf8')
    expect(eml).toMatch(/^To: folder@acme\.test$/m)
    expect(eml).toMatch(/^Subject: Your Dispatch API key for Folder Co is approved$/m)

    const row = await waitFor(
      async () => {
        const d = await delivery(outboxId)
        return d?.status === 'sent' && d
      },
      { what: 'the delivery record' },
    )
    expect(row).toMatchObject({
      status: 'sent',
      attempts: 1,
      recipient: 'folder@acme.test',
      last_error: null,
    })
    expect(eml).toContain(`Message-ID: ${row.provider_message_id}`)
    expect(await emlFiles(dir)).toHaveLength(1)
  })
})

describe('WORKER_QUEUES', () => {
  it('rejects an unknown queue, naming the variable', () => {
    expect(() => parseWorkerConfig({ WORKER_QUEUES: 'email,bogus' })).toThrow(ConfigError)
    expect(() => parseWorkerConfig({ WORKER_QUEUES: 'email,bogus' })).toThrow(/WORKER_QUEUES/)
    expect(parseWorkerConfig({ WORKER_QUEUES: 'email,outbox,email' }).roles).toEqual(['email', 'outbox'])
  })

  it("'email' sends e-mails but does not relay the outbox; an 'outbox' worker does", async () => {
    const prefix = testQueuePrefix()
    const senderDir = await mailDir()
    const relayDir = await mailDir()
    const { outboxId } = await approvedKey('roles@acme.test', 'Roles Co')
    await start({ QUEUE_PREFIX: prefix, MAIL_DIR: senderDir, WORKER_QUEUES: 'email' })

    // Many poll intervals later, the row is still waiting and nothing was written.
    await sleep(600)
    expect(await dispatchedAt(outboxId)).toBeNull()
    expect(await emlFiles(senderDir)).toHaveLength(0)
    expect(await delivery(outboxId)).toBeUndefined()

    // A relay-only worker moves the row; the e-mail-only worker sends it.
    await start({ QUEUE_PREFIX: prefix, MAIL_DIR: relayDir, WORKER_QUEUES: 'outbox' })
    await waitFor(async () => (await emlFiles(senderDir)).length > 0, { what: 'the e-mail from the sender' })
    expect(await dispatchedAt(outboxId)).toBeInstanceOf(Date)
    expect(await emlFiles(relayDir)).toHaveLength(0)
  })
})
