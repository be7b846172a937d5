import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

let world: DeliveryWorld
const children: ChildProcess[] = []
beforeAll(async () => {
  world = await createDeliveryWorld()
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await world?.close()
})

/** A real worker process, as ops run it. */
function spawnWorker(env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...world.workerEnv(env), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, exited }
}

const countSent = async () =>
  Number((await world.sql`select count(*) from messages where status = 'sent'`)[0]?.count)

it('a worker killed with SIGKILL mid-run: every message is delivered, none twice once it had a platform id', async () => {
  world.fake.latencyMs = 40
  const ids: string[] = []
  for (let i = 0; i < 150; i++) ids.push(await world.enqueue(text(`message ${i}`)))

  // Short locks, so the killed worker's jobs are found stalled within a second or two.
  const locks = { MESSAGES_LOCK_MS: '1000', MESSAGES_STALLED_INTERVAL_MS: '500', MESSAGES_CONCURRENCY: '8' }
  const first = spawnWorker(locks)
  await waitFor(async () => (await countSent()) >= 40, {
    what: 'the first worker to send 40',
    timeoutMs: 20_000,
  })
  first.child.kill('SIGKILL')
  await first.exited

  // What was recorded when it died: each of these must never go out again.
  const recorded = await world.sql<{ id: string; platform_message_id: string }[]>`
    select id, platform_message_id from messages where platform_message_id is not null`
  expect(recorded.length).toBeGreaterThanOrEqual(40)
  expect(recorded.length).toBeLessThan(150)

  const second = await world.startWorker(locks)
  await waitFor(async () => (await countSent()) === 150, { what: 'all 150 messages sent', timeoutMs: 30_000 })
  await second.close()

  for (const { id, platform_message_id } of recorded) {
    expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
    expect((await world.message(id))?.platform_message_id).toBe(platform_message_id)
  }
  for (const id of ids) {
    expect(world.fake.sendsOf(id), `message ${id}`).toBeGreaterThanOrEqual(1)
    // The stored id is one the platform actually gave for this message.
    const row = await world.message(id)
    const given = world.fake.requests.filter((r) => r.messageId === id).map((r) => r.platformMessageId)
    expect(given).toContain(row?.platform_message_id)
  }
}, 60_000)

it('SIGTERM lets in-flight deliveries finish and record before the process exits', async () => {
  world.fake.latencyMs = 700
  const ids: string[] = []
  for (let i = 0; i < 6; i++) ids.push(await world.enqueue(text(`slow ${i}`)))
  const worker = spawnWorker({ MESSAGES_CONCURRENCY: '3' })
  await waitFor(() => ids.filter((id) => world.fake.requests.some((r) => r.messageId === id)).length >= 3, {
    what: 'three deliveries in flight',
    timeoutMs: 15_000,
  })
  const inFlight = ids.filter((id) => world.fake.requests.some((r) => r.messageId === id))
  worker.child.kill('SIGTERM')
  expect(await worker.exited).toBe(0)
  for (const id of inFlight) {
    expect((await world.message(id))?.status, `in-flight message ${id}`).toBe('sent')
  }
  // What had not started stays queued for the next worker, not failed.
  expect(await world.queue.getFailedCount()).toBe(0)
  expect(await world.queue.getWaitingCount()).toBe(ids.length - inFlight.length)
}, 40_000)
