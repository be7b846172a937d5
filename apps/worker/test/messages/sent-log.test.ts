import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import { createDb, type DeliveryOutcome, type Sql } from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { startTcpProxy, type TcpProxy, testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest'
import { DeliveryRecorder } from '../../src/messages/delivery-recorder.ts'
import { SentLogSweeper } from '../../src/messages/sent-log.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

let world: DeliveryWorld
let proxy: TcpProxy
let redis: Redis
const children: ChildProcess[] = []
beforeAll(async () => {
  world = await createDeliveryWorld()
  const url = new URL(world.workerEnv().DATABASE_URL)
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
  redis = new Redis(testRedisUrl())
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  redis?.disconnect()
  await proxy?.close()
  await world?.close()
})

it('a worker killed with its sent outcomes in Redis and not in Postgres: another writes each once, none is sent again', async () => {
  const log = fairKeys(world.workerEnv().QUEUE_PREFIX, DEFAULT_SENDER_ID).sentLog
  // A worker process whose Postgres is behind the proxy.
  const url = new URL(world.workerEnv().DATABASE_URL)
  const proxied = `${proxy.url(url.protocol.replace(':', ''))}${url.pathname}`.replace(
    '://',
    `://${url.username}${url.password ? `:${url.password}` : ''}@`,
  )
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...world.workerEnv({ DATABASE_URL: proxied }), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  // Read what it writes: a pipe nobody reads fills up (64 KiB of warnings while Postgres is cut),
  // and a process writing to a full pipe stops, sends included. The tail is kept for a failure.
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8000)
  })
  onTestFailed(() => console.error(`the worker's last stderr:\n${stderr}`))
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const warm = await world.enqueue(text('warm-up'))
  await waitFor(async () => (await world.message(warm))?.status === 'sent' || undefined, {
    what: 'the worker up',
    timeoutMs: 20_000,
  })

  // Postgres unreachable for it: messages still go out, their outcomes wait in the sender's log.
  await proxy.cut()
  const ids: string[] = []
  for (let i = 0; i < 30; i++) ids.push(await world.enqueue(text(`logged ${i}`)))
  // Generous: on a loaded CI machine the worker process sends these 30 in well over 10 s.
  await waitFor(async () => (await redis.xlen(log)) >= 30 || undefined, {
    what: '30 outcomes logged',
    timeoutMs: 60_000,
  })
  expect(await redis.xlen(log)).toBe(30)
  expect(ids.every((id) => world.fake.sendsOf(id) === 1)).toBe(true)
  expect(await world.sql`select id from messages where id = any(${ids})`).toHaveLength(0)
  child.kill('SIGKILL')
  await exited

  // Another worker (Postgres reachable) writes what the log holds, and deletes it.
  const second = await world.startWorker()
  await waitFor(
    async () =>
      Number(
        (await world.sql`select count(*) from messages where id = any(${ids}) and status = 'sent'`)[0]?.count,
      ) === 30 || undefined,
    { what: 'the 30 logged outcomes in Postgres', timeoutMs: 20_000 },
  )
  await waitFor(async () => (await redis.xlen(log)) === 0 || undefined, {
    what: 'the log emptied',
    timeoutMs: 20_000,
  })
  await second.close()

  for (const id of ids) {
    // Sent once; the row holds the id the platform gave; one `message.sent` event at most.
    expect(world.fake.sendsOf(id), `message ${id}`).toBe(1)
    const given = world.fake.requests.find((r) => r.messageId === id)?.platformMessageId
    expect((await world.message(id))?.platform_message_id).toBe(given)
    const events =
      await world.sql`select 1 from webhook_events where message_id = ${id} and type = 'message.sent'`
    expect(events.length).toBeLessThanOrEqual(1)
  }
  // Completed jobs are removed as they complete: nothing of the 31 messages stays in the queue.
  expect(await world.queue.getCompletedCount()).toBe(0)
}, 150_000)

it('a job run again whose earlier run logged its send (killed before completing) is completed without sending', async () => {
  const prefix = world.workerEnv().QUEUE_PREFIX
  const id = await world.enqueue(text('sent by a run that died'))
  // As the earlier run left it: its send in the log, the job started once already.
  const outcome = {
    id,
    apiKeyId: world.apiKeyId,
    type: 'text',
    phone: '+5511987654321',
    userId: null,
    payload: { phone: '+5511987654321', text: 'sent by a run that died' },
    clientReference: null,
    senderPhoneNumberId: '106540352242922',
    senderId: DEFAULT_SENDER_ID,
    batchId: null,
    acceptedAt: new Date().toISOString(),
    sendAt: null,
    expiresAt: null,
    status: 'sent',
    attempts: 1,
    platformMessageId: 'wamid.earlier-run',
    lastErrorCode: null,
    lastErrorMessage: null,
    at: new Date().toISOString(),
  }
  await redis.xadd(fairKeys(prefix, DEFAULT_SENDER_ID).sentLog, '*', 'o', JSON.stringify(outcome))
  await redis.hset(world.queue.toKey(id), 'ats', 1)

  const worker = await world.startWorker()
  await waitFor(async () => (await world.message(id))?.status === 'sent' || undefined, { what: 'the record' })
  await worker.close()
  expect(world.fake.sendsOf(id)).toBe(0)
  expect((await world.message(id))?.platform_message_id).toBe('wamid.earlier-run')
}, 30_000)

it('an entry Postgres refuses for over an hour is dropped; one it could not reach stays, however old', async () => {
  const stream = `${world.workerEnv().QUEUE_PREFIX}:sent-log-give-up`
  const now = new Date()
  const outcome: DeliveryOutcome = {
    id: messageIdAt(now.getTime() - 2 * 3600_000),
    // No such key: Postgres refuses the row (its foreign key).
    apiKeyId: randomUUID(),
    type: 'text',
    phone: '+5511987654321',
    userId: null,
    payload: { text: 'hi' },
    clientReference: null,
    senderPhoneNumberId: '106540352242922',
    senderId: DEFAULT_SENDER_ID,
    batchId: null,
    acceptedAt: new Date(now.getTime() - 2 * 3600_000),
    sendAt: null,
    expiresAt: null,
    status: 'sent',
    attempts: 1,
    platformMessageId: 'wamid.refused',
    lastErrorCode: null,
    lastErrorMessage: null,
    at: now,
  }
  await redis.xadd(stream, `${now.getTime() - 2 * 3600_000}-0`, 'o', JSON.stringify(outcome))
  const logger = pino({ level: 'silent' })
  const sweepWith = (sql: Sql) =>
    new SentLogSweeper(redis, new DeliveryRecorder(sql, { redis }), () => [stream], logger).sweep()

  // Postgres out of reach (nothing listens there): the entry waits for it, two hours old or not.
  const down = createDb('postgres://postgres@127.0.0.1:1/none', { max: 1 })
  await expect(sweepWith(down.sql)).rejects.toThrow()
  await down.close()
  expect(await redis.xlen(stream)).toBe(1)

  // Postgres answers and refuses the row: after an hour of that, the entry goes.
  await expect(sweepWith(world.sql)).rejects.toThrow()
  expect(await redis.xlen(stream)).toBe(0)
})
