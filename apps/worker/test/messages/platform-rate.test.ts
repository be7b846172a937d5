import { waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

let world: DeliveryWorld
beforeAll(async () => {
  world = await createDeliveryWorld()
})
afterAll(async () => {
  await world?.close()
})

it('the platform rate holds across worker processes: two workers together send at most the limit per second', async () => {
  // Two workers, each free to send 10 at once, sharing a limit of 4 messages a second.
  const env = { PLATFORM_RATE_PER_SECOND: '4', MESSAGES_CONCURRENCY: '10' }
  await world.startWorker(env)
  await world.startWorker(env)
  const ids: string[] = []
  for (let i = 0; i < 12; i++) ids.push(await world.enqueue(text(`rated ${i}`)))
  await waitFor(() => ids.every((id) => world.fake.sendsOf(id) === 1), {
    what: 'all 12 sent',
    timeoutMs: 20_000,
  })

  const times = world.fake.requests.filter((r) => ids.includes(r.messageId ?? '')).map((r) => r.receivedAt)
  times.sort((a, b) => a - b)
  // 12 messages at 4 a second take three windows: the last goes out two seconds after the first
  // window opened, less how late the first message reached the platform (up to ~150 ms on a loaded
  // machine). With a limit per worker (8 a second together) the last would go within one second.
  expect((times.at(-1) ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(1500)
}, 30_000)
