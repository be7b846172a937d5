import { randomUUID } from 'node:crypto'
import { createDb, type DeliveryOutcome, recordDeliveryOutcomes, recordHeldMessages } from '@dispatch/db'
import { createTestDatabase } from '@dispatch/testing'
import { expect, it } from 'vitest'
import { insertSenderKey } from './world.ts'

/**
 * A hold for the messaging limit and a message's outcomes, written in either order (a hold's
 * statement can be slower than a send's record): the status only moves forward.
 */
it('a hold never moves a recorded outcome back, and every outcome moves on from a hold', async () => {
  const database = await createTestDatabase()
  const { db, sql, close } = createDb(database.url, { max: 2 })
  try {
    const key = await insertSenderKey(db)
    const base = () => ({
      id: randomUUID(),
      apiKeyId: key.id,
      type: 'template' as const,
      phone: '+5511987654321',
      userId: null,
      payload: { phone: '+5511987654321', templateId: 'order_shipped', language: 'pt_BR' },
      clientReference: null,
      senderPhoneNumberId: '100000000000001',
      senderId: 'default',
      batchId: null,
      expiresAt: null,
      acceptedAt: new Date(),
      attempts: 0,
      at: new Date(),
    })
    const roomAt = new Date(Date.now() + 3_600_000)
    const hold = (m: ReturnType<typeof base>) =>
      recordHeldMessages(db, [{ ...m, sendAt: roomAt, scheduledReason: 'messaging_limit' }])
    const sent = (m: ReturnType<typeof base>): DeliveryOutcome => ({
      ...m,
      sendAt: null,
      status: 'sent',
      attempts: 1,
      platformMessageId: `wamid.${randomUUID()}`,
      lastErrorCode: null,
      lastErrorMessage: null,
      at: new Date(),
    })
    const row = async (id: string) =>
      (
        await sql`select status, scheduled_reason,
          coalesce(send_at = ${roomAt.toISOString()}::timestamptz, false) as until_room
          from messages where id = ${id}`
      )[0]

    // Held, then sent: sent, and why it waited is kept.
    const first = base()
    await hold(first)
    expect(await row(first.id)).toEqual({
      status: 'scheduled',
      scheduled_reason: 'messaging_limit',
      until_room: true,
    })
    await recordDeliveryOutcomes(sql, [sent(first)])
    expect(await row(first.id)).toMatchObject({ status: 'sent', scheduled_reason: 'messaging_limit' })

    // Sent first, the hold's write after it: still sent, nothing of the hold written.
    const second = base()
    await recordDeliveryOutcomes(sql, [sent(second)])
    await hold(second)
    expect(await row(second.id)).toEqual({ status: 'sent', scheduled_reason: null, until_room: false })
  } finally {
    await close()
    await database.drop()
  }
})
