import { startTcpProxy, testRedisUrl, waitFor } from '@dispatch/testing'
import { expect, it } from 'vitest'
import { createDeliveryWorld, text } from './world.ts'

it('closes within its grace period even when Redis has become unreachable', async () => {
  const world = await createDeliveryWorld()
  const redis = new URL(testRedisUrl())
  const proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) })
  try {
    const worker = await world.startWorker({
      REDIS_URL: proxy.url('redis'),
      WORKER_QUEUES: 'email,outbox,messages',
      SHUTDOWN_GRACE_MS: '1000',
    })
    // Connected and working before the cut.
    const id = await world.enqueue(text())
    await waitFor(async () => (await world.message(id))?.status === 'sent', { what: 'a first delivery' })

    await proxy.cut()
    // Let the connections notice and start reconnecting: the state BullMQ's close() can hang in.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const started = Date.now()
    const outcome = await Promise.race([
      worker.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 15_000)),
    ])
    expect(outcome).toBe('closed')
    expect(Date.now() - started).toBeLessThan(15_000)
  } finally {
    await proxy.restore().catch(() => {})
    await proxy.close()
    await world.close()
  }
}, 40_000)
