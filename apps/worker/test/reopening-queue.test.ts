import { ReopeningQueue } from '@dispatch/runtime/queues'
import { testQueuePrefix, testRedisUrl } from '@dispatch/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, expect, it } from 'vitest'

const prefix = testQueuePrefix()
const clients: Redis[] = []
const client = () => {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 })
  clients.push(redis)
  return redis
}
afterAll(async () => {
  const redis = client()
  const keys = await redis.keys(`${prefix}:*`)
  if (keys.length > 0) await redis.del(...keys)
  for (const c of clients) c.disconnect()
})

it('a queue that failed to open is opened again, where BullMQ would keep failing', async () => {
  // A connection that is gone when the queue opens, as when Redis drops it at that moment.
  const lost = client()
  await lost.ping()
  const ended = new Promise((resolve) => lost.once('end', resolve))
  lost.disconnect()
  await ended
  const broken = new Queue('lost', { connection: lost, prefix })
  broken.on('error', () => {})
  // BullMQ keeps that first failure: every later call on the queue fails with it.
  await expect(broken.waitUntilReady()).rejects.toThrow()
  await expect(broken.add('job', {})).rejects.toThrow()

  let opened = 0
  const queue = new ReopeningQueue(() => {
    opened += 1
    const q = new Queue('lost', { connection: opened === 1 ? lost : client(), prefix })
    q.on('error', () => {})
    return q
  })
  await expect(queue.get()).rejects.toThrow()
  const job = await (await queue.get()).add('job', { n: 1 })
  expect(opened).toBe(2)
  expect(job.id).toBeDefined()
  // Open: the same queue from now on.
  expect(await queue.get()).toBe(await queue.get())
  expect(opened).toBe(2)
  await queue.close()
})
