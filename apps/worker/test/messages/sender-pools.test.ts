import { randomUUID } from 'node:crypto'
import { type MessageJob, senderQueueName } from '@dispatch/contracts'
import { createSecretBox } from '@dispatch/runtime'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { testRedisUrl, waitFor } from '@dispatch/testing'
import { Queue } from 'bullmq'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

const SECOND = { id: randomUUID(), number: '300000000000999', token: 'EAAG-pool-token-0004' }

let world: DeliveryWorld
let queue: Queue<MessageJob>
beforeAll(async () => {
  world = await createDeliveryWorld()
  const sealed = createSecretBox({ APP_ENV: 'development' }).seal(SECOND.token)
  await world.sql`insert into senders (id, phone_number_id, display_name, access_token_ciphertext, access_token_last4)
    values (${SECOND.id}, ${SECOND.number}, 'Pool test', ${sealed}, ${SECOND.token.slice(-4)})`
  queue = new Queue<MessageJob>(senderQueueName(SECOND.id), {
    connection: { url: testRedisUrl() },
    prefix: world.workerEnv().QUEUE_PREFIX,
  })
})
afterAll(async () => {
  await queue?.obliterate({ force: true }).catch(() => {})
  await queue?.close()
  await world?.close()
})

it('a worker delivers only for the senders WORKER_SENDERS names; another pool delivers for the rest', async () => {
  await world.startWorker({ WORKER_SENDERS: 'default' })
  const messageId = randomUUID()
  const job: MessageJob = {
    messageId,
    apiKeyId: world.apiKeyId,
    acceptedAt: new Date().toISOString(),
    senderId: SECOND.id,
    message: text(),
  }
  await queue.add('text', job, { ...MESSAGE_JOB_OPTIONS, jobId: messageId })
  const onDefault = await world.enqueue(text())
  await waitFor(async () => (await world.message(onDefault))?.status === 'sent' || undefined, {
    what: "the default pool's message",
  })
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(world.fake.requests.filter((r) => r.messageId === messageId)).toHaveLength(0)

  await world.startWorker({ WORKER_SENDERS: SECOND.id })
  const row = await waitFor(async () => {
    const found = await world.message(messageId)
    return found?.status === 'sent' ? found : undefined
  })
  expect(row).toMatchObject({ sender_id: SECOND.id, sender_phone_number_id: SECOND.number })
  const [sent] = world.fake.sentFrom(SECOND.number)
  expect(sent?.headers.authorization).toBe(`Bearer ${SECOND.token}`)
})
