import { randomUUID } from 'node:crypto'
import { createDb, type DeliveryOutcome } from '@dispatch/db'
import { createTestDatabase } from '@dispatch/testing'
import { expect, it } from 'vitest'
import { DeliveryRecorder } from '../../src/messages/delivery-recorder.ts'
import { insertSenderKey } from './world.ts'

const outcome = (apiKeyId: string): DeliveryOutcome => ({
  id: randomUUID(),
  apiKeyId,
  type: 'text',
  phone: '+5511987654321',
  userId: null,
  payload: { phone: '+5511987654321', text: 'hi' },
  clientReference: null,
  senderPhoneNumberId: '100000000000001',
  senderId: 'default',
  batchId: null,
  sendAt: null,
  expiresAt: null,
  acceptedAt: new Date(),
  status: 'sent',
  attempts: 1,
  platformMessageId: `wamid.${randomUUID()}`,
  lastErrorCode: null,
  lastErrorMessage: null,
  at: new Date(),
})

it('one outcome that cannot be written does not fail the others recorded with it', async () => {
  const database = await createTestDatabase()
  const { db, sql, close } = createDb(database.url, { max: 2 })
  try {
    const key = await insertSenderKey(db)
    const good = [outcome(key.id), outcome(key.id)]
    // A message whose key no longer exists: the foreign key refuses its row.
    const orphan = outcome(randomUUID())
    const recorder = new DeliveryRecorder(sql)
    const results = await Promise.allSettled([...good, orphan].map((o) => recorder.record(o)))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected'])
    const rows = await database.sql`select id from messages order by id`
    expect(rows.map((r) => r.id).sort()).toEqual(good.map((o) => o.id).sort())
  } finally {
    await close()
    await database.drop()
  }
})

it('writes each failed attempt on the timeline, a retried one recorded together with its next attempt', async () => {
  const database = await createTestDatabase()
  const { db, sql, close } = createDb(database.url, { max: 2 })
  try {
    const key = await insertSenderKey(db)
    const first = outcome(key.id)
    // A transient error, retried at once: its outcome and the next attempt's meet in one batch.
    const retried: DeliveryOutcome = {
      ...first,
      status: 'sending',
      platformMessageId: null,
      lastErrorCode: '131000',
      lastErrorMessage: 'Something went wrong',
    }
    const failed: DeliveryOutcome = {
      ...retried,
      status: 'failed',
      attempts: 2,
      lastErrorCode: '131026',
      lastErrorMessage: 'Message undeliverable',
      at: new Date(retried.at.getTime() + 20),
    }
    const recorder = new DeliveryRecorder(sql)
    await Promise.all([recorder.record(retried), recorder.record(failed)])
    const attempts =
      await database.sql`select attempt, error_code from message_attempts where message_id = ${first.id} order by attempt`
    expect(attempts.map((a) => [a.attempt, a.error_code])).toEqual([
      [1, '131000'],
      [2, '131026'],
    ])
    const [row] = await database.sql`select status, attempts from messages where id = ${first.id}`
    expect(row).toMatchObject({ status: 'failed', attempts: 2 })
  } finally {
    await close()
    await database.drop()
  }
})
