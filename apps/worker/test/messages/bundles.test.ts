import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { MessageJob } from '@dispatch/contracts'
import {
  fairKeys,
  handOverMessageClaim,
  MESSAGE_BUNDLE_JOB_NAME,
  MESSAGE_JOB_OPTIONS,
  messageBundleJobId,
  messageClaimKey,
} from '@dispatch/runtime/message-handoff'
import { graphError, testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { runBundle } from './bundle-run.ts'
import { createDeliveryWorld, type DeliveryWorld, PHONE_NUMBER_ID, text } from './world.ts'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))
const BUNDLES = { MESSAGES_BUNDLE_SIZE: '10' }

let world: DeliveryWorld
let redis: Redis
const children: ChildProcess[] = []
beforeAll(async () => {
  world = await createDeliveryWorld()
  redis = new Redis(testRedisUrl())
})
afterEach(async () => {
  world.fake.clearScript()
  world.fake.latencyMs = 0
  world.fake.number(PHONE_NUMBER_ID, { answer: undefined })
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  redis?.disconnect()
  await world?.close()
})

const rowsOf = (ids: string[]) =>
  world.sql<{ id: string; status: string; attempts: number; platform_message_id: string | null }[]>`
    select id, status, attempts, platform_message_id from messages where id in ${world.sql(ids)}`

async function acceptMany(count: number, label: string) {
  const ids: string[] = []
  for (let i = 0; i < count; i++) ids.push(await world.accept(text(`${label} ${i}`)))
  return ids
}

/** A bundle as an admitter makes it, added straight to the queue. */
async function enqueueBundle(messages: MessageJob[], id = messageBundleJobId(messages[0]?.messageId ?? 'x')) {
  await world.queue.add(MESSAGE_BUNDLE_JOB_NAME, { messages } as never, { ...MESSAGE_JOB_OPTIONS, jobId: id })
  return id
}

const job = (body: string): MessageJob => ({
  messageId: crypto.randomUUID(),
  apiKeyId: world.apiKeyId,
  acceptedAt: new Date().toISOString(),
  message: text(body),
})

it('with MESSAGES_BUNDLE_SIZE, messages go several to a job: each is sent once and recorded, and the index empties', async () => {
  // Waiting together, so the admitter finds them in one tick.
  const ids = await acceptMany(60, 'bundled')
  const worker = await world.startWorker(BUNDLES)
  await waitFor(async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length === 60, {
    what: 'all 60 recorded sent',
    timeoutMs: 20_000,
  })
  for (const id of ids) expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
  for (const row of await rowsOf(ids)) expect(row.attempts).toBe(1)
  // Fewer jobs than messages went through the queue: none of these has a job of its own.
  const own = await Promise.all(ids.map((id) => world.queue.getJob(id)))
  expect(own.filter(Boolean)).toHaveLength(0)
  // Once recorded, the messages leave the index; the finished bundles (their content) went at once.
  const index = fairKeys(world.queuePrefix, 'default').bundled
  await waitFor(async () => (await redis.hlen(index)) === 0, { what: 'the bundle index emptied' })
  await waitFor(async () => (await world.queue.getJobCounts('completed')).completed === 0, {
    what: 'finished bundles removed',
  })
  await worker.close()
}, 40_000)

it('a bundled message whose attempt fails goes on as a job of its own and is sent on its second attempt; the others once', async () => {
  const worker = await world.startWorker(BUNDLES)
  const messages = Array.from({ length: 5 }, (_, i) => job(`retried ${i}`))
  world.fake.latencyMs = 30
  world.fake.script(graphError(131000, 'Something went wrong', 500))
  await enqueueBundle(messages)
  const ids = messages.map((m) => m.messageId)
  await waitFor(async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length === 5, {
    what: 'all 5 sent',
    timeoutMs: 15_000,
  })
  const rows = await rowsOf(ids)
  const retried = rows.filter((r) => r.attempts === 2)
  expect(retried).toHaveLength(1)
  expect(rows.filter((r) => r.attempts === 1)).toHaveLength(4)
  for (const id of ids) expect(world.fake.sendsOf(id)).toBe(1)
  // The retried one's own job took the bundle's claim over (else it would have left the message to
  // the bundle, unsent): the claim still names the bundle, kept its window past the record. The own
  // job itself is gone, removed as it completed.
  const retriedId = retried[0]?.id as string
  expect(await redis.get(messageClaimKey(world.queuePrefix, retriedId))).toBe(
    messageBundleJobId(messages[0]?.messageId as string),
  )
  expect(await world.queue.getJob(retriedId)).toBeUndefined()
  await worker.close()
}, 30_000)

it('a message canceled before its bundle runs is recorded canceled and never sent; the bundle sends the rest', async () => {
  const messages = Array.from({ length: 4 }, (_, i) => job(`cancel ${i}`))
  const canceled = messages[2] as MessageJob
  await redis.set(messageClaimKey(world.queuePrefix, canceled.messageId), 'cancel', 'PX', 60_000)
  await enqueueBundle(messages)
  const worker = await world.startWorker(BUNDLES)
  const ids = messages.map((m) => m.messageId)
  await waitFor(async () => (await rowsOf(ids)).length === 4, { what: 'all 4 recorded' })
  const rows = await rowsOf(ids)
  expect(rows.find((r) => r.id === canceled.messageId)?.status).toBe('canceled')
  expect(rows.filter((r) => r.status === 'sent')).toHaveLength(3)
  expect(world.fake.sendsOf(canceled.messageId)).toBe(0)
  await worker.close()
}, 20_000)

it('a message in two bundles (an admission run again after an admitter died) is sent by one of them only', async () => {
  const shared = job('in two bundles')
  const first = [job('first a'), shared, job('first b')]
  const second = [shared, job('second a')]
  // Slow sends: both bundles hold the message at once, the first still sending it.
  world.fake.latencyMs = 300
  await enqueueBundle(first, messageBundleJobId('first'))
  await enqueueBundle(second, messageBundleJobId('second'))
  const worker = await world.startWorker(BUNDLES)
  const ids = [...first, ...second].map((m) => m.messageId)
  await waitFor(async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length === 4, {
    what: 'the 4 messages sent',
  })
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(world.fake.sendsOf(shared.messageId)).toBe(1)
  await worker.close()
}, 20_000)

it('a platform rate limit (130429) in a bundle sends it back: every message goes once the pause ends, none twice', async () => {
  const worker = await world.startWorker({ ...BUNDLES, MESSAGES_CONCURRENCY: '4' })
  world.fake.latencyMs = 20
  // The first send meets the limit; those already in flight beside it go through.
  world.fake.script({ ...graphError(130429, '(#130429) Rate limit hit'), headers: { 'retry-after': '1' } })
  const messages = Array.from({ length: 10 }, (_, i) => job(`limited ${i}`))
  await enqueueBundle(messages)
  const ids = messages.map((m) => m.messageId)
  await waitFor(async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length === 10, {
    what: 'all 10 sent after the pause',
    timeoutMs: 20_000,
  })
  for (const id of ids) expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
  // The limit spent no attempt.
  for (const row of await rowsOf(ids)) expect(row.attempts).toBe(1)
  await worker.close()
}, 30_000)

it('a 130429 met by one of several bundles in flight: the others, taken during the pause, lose none of their messages', async () => {
  const worker = await world.startWorker({ ...BUNDLES, MESSAGES_CONCURRENCY: '4' })
  world.fake.latencyMs = 20
  world.fake.script({ ...graphError(130429, '(#130429) Rate limit hit'), headers: { 'retry-after': '1' } })
  const bundles = Array.from({ length: 4 }, (_, b) =>
    Array.from({ length: 8 }, (_, i) => job(`paused ${b}.${i}`)),
  )
  for (const [b, messages] of bundles.entries())
    await enqueueBundle(messages, messageBundleJobId(`paused-${b}`))
  const ids = bundles.flat().map((m) => m.messageId)
  await waitFor(async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length === ids.length, {
    what: 'all 32 sent after the pause',
    timeoutMs: 20_000,
  })
  for (const id of ids) expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
  await worker.close()
}, 30_000)

it('a worker killed with SIGKILL mid-bundles: every message is delivered, none twice once it had a platform id', async () => {
  world.fake.latencyMs = 40
  const ids = await acceptMany(150, 'killed')
  const env = {
    ...BUNDLES,
    MESSAGES_LOCK_MS: '1000',
    MESSAGES_STALLED_INTERVAL_MS: '500',
    MESSAGES_CONCURRENCY: '8',
  }
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...world.workerEnv(env), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const sentCount = async () => (await rowsOf(ids)).filter((r) => r.status === 'sent').length
  await waitFor(async () => (await sentCount()) >= 40, {
    what: 'the first worker to send 40',
    timeoutMs: 20_000,
  })
  child.kill('SIGKILL')
  await exited
  const recorded = (await rowsOf(ids)).filter((r) => r.platform_message_id)

  const second = await world.startWorker(env)
  await waitFor(async () => (await sentCount()) === 150, { what: 'all 150 sent', timeoutMs: 40_000 })
  await second.close()
  for (const { id, platform_message_id } of recorded) {
    expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
    expect((await world.message(id))?.platform_message_id).toBe(platform_message_id)
  }
  for (const id of ids) expect(world.fake.sendsOf(id), `message ${id}`).toBeGreaterThanOrEqual(1)
}, 90_000)

it('a bundle run again skips what it handed on, and sends a message whose own job (an earlier admission) left it to the bundle', async () => {
  const bundleId = messageBundleJobId('run-again')
  const [sent, handedOn, admittedAlone] = [job('run again a'), job('run again b'), job('run again c')] as [
    MessageJob,
    MessageJob,
    MessageJob,
  ]
  // An earlier run handed one on (claimedBy the bundle); an earlier admission gave another a job of
  // its own, not yet run. Both wait far ahead.
  const later = { ...MESSAGE_JOB_OPTIONS, delay: 3600_000 }
  await world.queue.add('text', { ...handedOn, claimedBy: bundleId }, { ...later, jobId: handedOn.messageId })
  await world.queue.add('text', admittedAlone, { ...later, jobId: admittedAlone.messageId })
  // Its second run (its first died before it ended), as BullMQ hands it out again.
  await runBundle(world, [sent, handedOn, admittedAlone], { attemptsStarted: 2, id: bundleId })
  expect(world.fake.sendsOf(sent.messageId)).toBe(1)
  expect(world.fake.sendsOf(admittedAlone.messageId)).toBe(1)
  // Its own job sends it when due.
  expect(world.fake.sendsOf(handedOn.messageId)).toBe(0)
})

it('a message its bundle handed off a fallen pool number is left by the bundle run again, and sent by its new job; a canceled one is not handed off', async () => {
  const bundleId = messageBundleJobId('handed-over')
  const [moved, stays, canceled] = [job('handed a'), job('handed b'), job('handed c')] as [
    MessageJob,
    MessageJob,
    MessageJob,
  ]
  const claimOf = (m: MessageJob) => messageClaimKey(world.queuePrefix, m.messageId)
  // The bundle held their claims when its number fell (a cancel took the third's first).
  for (const m of [moved, stays]) await redis.set(claimOf(m), bundleId, 'PX', 600_000)
  await redis.set(claimOf(canceled), 'cancel', 'PX', 600_000)
  const to = 'moved-to-another-number'
  expect(await handOverMessageClaim(redis, world.queuePrefix, moved, [bundleId], to)).toBe(true)
  expect(await handOverMessageClaim(redis, world.queuePrefix, canceled, [bundleId], to)).toBe(false)
  expect(await redis.get(claimOf(moved))).toBe(to)
  // Renamed, not renewed: it keeps the life the bundle's claim had.
  expect(await redis.pttl(claimOf(moved))).toBeGreaterThan(500_000)
  expect(await redis.get(claimOf(canceled))).toBe('cancel')
  // The bundle run again (killed after the hand-off) sends the one it kept, not the one it handed over.
  await runBundle(world, [moved, stays, canceled], { attemptsStarted: 2, id: bundleId })
  expect(world.fake.sendsOf(stays.messageId)).toBe(1)
  expect(world.fake.sendsOf(moved.messageId)).toBe(0)
  expect(world.fake.sendsOf(canceled.messageId)).toBe(0)
  // Its new job (here another bundle) takes the claim over and sends it, once.
  await runBundle(world, [{ ...moved, claimedBy: to, readmitted: true }], { attemptsStarted: 1 })
  await runBundle(world, [{ ...moved, claimedBy: to, readmitted: true }], { attemptsStarted: 1 })
  expect(world.fake.sendsOf(moved.messageId)).toBe(1)
})
