import { randomUUID } from 'node:crypto'
import { DEFAULT_SENDER_ID, type MessageJob, senderQueueName } from '@dispatch/contracts'
import { copyOptOut, createSecretBox, recipientHasher } from '@dispatch/runtime'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { testRedisUrl, waitFor } from '@dispatch/testing'
import { parseWorkerConfig } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, PHONE_NUMBER_ID, text } from './world.ts'

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

it('a pooled message is canceled by an opt-out on another number of its pool, a pool the worker had not read yet, or the numbers an earlier API put on its job', async () => {
  // A worker of its own (beside the first test's, when it ran): this test runs alone too.
  await world.startWorker({ WORKER_SENDERS: DEFAULT_SENDER_ID })
  const redis = new Redis(testRedisUrl())
  const config = parseWorkerConfig(world.workerEnv())
  const hash = recipientHasher(config)
  // A pool of the default number and the second, made as the message is stored: the worker reads it
  // at delivery (its sweep may not have yet).
  const [pool] = await world.sql<
    { id: string }[]
  >`insert into sender_pools (name) values ('Acme') returning id`
  const poolId = (pool as { id: string }).id
  await world.sql`insert into sender_pool_members (pool_id, sender_id, position)
    values (${poolId}, ${DEFAULT_SENDER_ID}, 0), (${poolId}, ${SECOND.id}, 1)`
  const acceptedAt = new Date().toISOString()
  const stopped = '+5511955501001'
  const reached = '+5511955501002'
  // The recipient's STOP to the second number, after the message was accepted.
  await copyOptOut(redis, world.queuePrefix, {
    phoneNumberId: SECOND.number,
    recipientHash: hash(stopped),
    scope: 'all',
  })
  redis.disconnect()
  const pooled = { senderId: DEFAULT_SENDER_ID, senderPoolId: poolId, acceptedAt }
  const canceled = await world.enqueue(
    { type: 'text', body: { phone: stopped, text: 'Shipped' } },
    undefined,
    pooled,
  )
  const sent = await world.enqueue(
    { type: 'text', body: { phone: reached, text: 'Shipped' } },
    undefined,
    pooled,
  )
  // As an earlier API stored a pooled job: its pool's numbers on it, checked whatever the pool is now.
  const earlier = await world.enqueue(
    { type: 'text', body: { phone: stopped, text: 'Shipped' } },
    undefined,
    {
      senderId: DEFAULT_SENDER_ID,
      senderPoolId: randomUUID(),
      optOutNumbers: [PHONE_NUMBER_ID, SECOND.number],
      acceptedAt,
    },
  )
  const settled = (id: string) =>
    waitFor(async () => {
      const row = await world.message(id)
      return row && row.status !== 'queued' && row.status !== 'sending' ? row : undefined
    })
  expect((await settled(canceled)).status).toBe('canceled')
  expect((await settled(earlier)).status).toBe('canceled')
  expect((await settled(sent)).status).toBe('sent')
  expect(world.fake.requests.some((r) => r.messageId === canceled || r.messageId === earlier)).toBe(false)
})
