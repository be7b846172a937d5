import { createDb, decideApiKey, generateApiKey, insertApiKey } from '@dispatch/db'
import {
  createTestDatabase,
  startSmtpServer,
  testQueuePrefix,
  testRedisUrl,
  waitFor,
} from '@dispatch/testing'
import { expect, it } from 'vitest'
import { createWorkerLogger, parseWorkerConfig, startWorker } from '../src/index.ts'

/** A fresh database with one approved key: its outbox row is the first, id 1. */
async function databaseWithOneDecision(email: string) {
  const database = await createTestDatabase()
  const { db, close } = createDb(database.url, { max: 1 })
  const { keyHash, keyPrefix } = generateApiKey('development')
  const key = await insertApiKey(db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName: 'Reset Co',
    email,
    scopes: ['send:free-text'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
  await decideApiKey(db, { id: key.id, decision: 'approve', actor: 'test', reason: null, now: new Date() })
  await close()
  const [row] = await database.sql`select id from outbox`
  expect(row?.id).toBe('1')
  return database
}

it('sends the e-mails of a new database even though Redis remembers jobs of an old one with the same row ids', async () => {
  const smtp = await startSmtpServer()
  const queuePrefix = testQueuePrefix()
  const run = async (databaseUrl: string, email: string) => {
    const config = parseWorkerConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: queuePrefix,
      SMTP_URL: smtp.url,
      OUTBOX_POLL_MS: '50',
      LOG_LEVEL: 'silent',
    })
    const worker = await startWorker(config, createWorkerLogger(config))
    try {
      await waitFor(() => smtp.messagesTo(email).length === 1, { what: `the e-mail to ${email}` })
    } finally {
      await worker.close()
    }
  }
  // The same queue (and its finished jobs) outlives the database: a reset, a restore, a new volume.
  const before = await databaseWithOneDecision('before-reset@acme.test')
  const after = await databaseWithOneDecision('after-reset@acme.test')
  try {
    await run(before.url, 'before-reset@acme.test')
    await run(after.url, 'after-reset@acme.test')
  } finally {
    await smtp.close()
    await before.drop()
    await after.drop()
  }
})
