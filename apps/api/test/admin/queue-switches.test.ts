import { type QueueList, type QueueView, type SenderView, senderQueueName } from '@dispatch/contracts'
import {
  type FakeWhatsApp,
  startFakeWhatsApp,
  startSmtpServer,
  type TestSmtpServer,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  requestKey,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const DEFAULT_NUMBER = '100000000000555'
const DEFAULT_TOKEN = 'EAAG-switch-default-token-01'
const SECOND_NUMBER = '200000000000666'
const SECOND_TOKEN = 'EAAG-switch-second-token-002'
/** How long a test watches that nothing goes out: many admission rounds and registry refreshes. */
const QUIET_MS = 1200

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let smtp: TestSmtpServer
let worker: RunningWorker
let keyA: { id: string; key: string }
let keyB: { id: string; key: string }
let second: SenderView
const queues: Queue[] = []

const workerEnv = () => ({
  WHATSAPP_API_URL: fake.url,
  WHATSAPP_ACCESS_TOKEN: DEFAULT_TOKEN,
  WHATSAPP_PHONE_NUMBER_ID: DEFAULT_NUMBER,
  SMTP_URL: smtp.url,
  ADMISSION_INTERVAL_MS: '20',
  SENDER_REFRESH_MS: '200',
  WORKER_QUEUES: 'messages,outbox,email',
})

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  smtp = await startSmtpServer()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000' })
  worker = await startTestWorker(world, workerEnv())
  keyA = await activeKey(app, { scopes: SEND_SCOPES })
  keyB = await activeKey(app, { scopes: SEND_SCOPES })
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: { phoneNumberId: SECOND_NUMBER, displayName: 'Second line', accessToken: SECOND_TOKEN },
  })
  expect(created.statusCode, created.body).toBe(201)
  second = created.json<SenderView>()
  const bound = await app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${keyB.id}`,
    headers: asAdmin(),
    payload: { senderId: second.id },
  })
  expect(bound.statusCode, bound.body).toBe(200)
})
afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()))
  await worker?.close()
  await app?.close()
  await fake?.close()
  await smtp?.close()
  await world?.close()
})

// A test that failed half way leaves no switch on for the next.
afterEach(async () => {
  const paused = await world.sql<{ name: string }[]>`select name from queue_controls where paused`
  for (const { name } of paused) await switchQueue(name, 'resume')
})

/** A BullMQ queue of this test's prefix, to read its pause as the workers see it. */
function bullQueue(name: string) {
  const queue = new Queue(name, { connection: { url: world.redisUrl }, prefix: world.queuePrefix })
  queues.push(queue)
  return queue
}

const switchQueue = (name: string, action: 'pause' | 'resume', payload?: object, token = ADMIN.ana) =>
  app.inject({
    method: 'POST',
    url: `/api/admin/queues/${name}/${action}`,
    headers: asAdmin(token),
    ...(payload ? { payload } : {}),
  })

async function switched(name: string, action: 'pause' | 'resume', payload?: object, token = ADMIN.ana) {
  const res = await switchQueue(name, action, payload, token)
  expect(res.statusCode, res.body).toBe(200)
  return res.json<QueueView>()
}

async function sendText(key: { key: string }, text = 'hello') {
  const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

const reached = (id: string) => fake.requests.some((r) => r.messageId === id)
const allSent = (ids: string[], what: string) =>
  waitFor(() => ids.every((id) => fake.sendsOf(id) === 1) || undefined, { what, timeoutMs: 15_000 })
const quiet = () => new Promise((resolve) => setTimeout(resolve, QUIET_MS))
const pausedInRedis = (name: string, paused = true) =>
  waitFor(async () => (await bullQueue(name).isPaused()) === paused || undefined, {
    what: `${name} ${paused ? 'paused' : 'resumed'} in BullMQ`,
  })
const auditOf = (name: string) =>
  world.sql`select actor, action, details from admin_audit_log where target_type = 'queue' and target_id = ${name}
            order by id`

describe('GET /api/admin/queues', () => {
  it('lists messages, each sender’s queue, email and webhooks, with counts; admins only', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/admin/queues', headers: asAdmin() })
    expect(res.statusCode, res.body).toBe(200)
    const { data } = res.json<QueueList>()
    expect(data.map((q) => q.name)).toEqual([
      'messages',
      'messages.default',
      `messages.${second.id}`,
      'email',
      'webhooks',
    ])
    expect(data[1]).toMatchObject({ kind: 'sender', senderId: 'default', queue: 'messages', paused: false })
    expect(data[2]).toMatchObject({ senderId: second.id, queue: senderQueueName(second.id) })
    expect(data[0]?.counts).toEqual({
      waiting: expect.any(Number),
      active: expect.any(Number),
      delayed: expect.any(Number),
      failed: expect.any(Number),
      prioritized: expect.any(Number),
      waitingAdmission: expect.any(Number),
    })
    expectError(await app.inject({ method: 'GET', url: '/api/admin/queues' }), 401, 'ADMIN_AUTH_REQUIRED')
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/queues', headers: { 'x-api-key': keyA.key } }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
  })

  it('answers 404 for a name that is no queue, or a sender that does not exist', async () => {
    expectError(await switchQueue('orders', 'pause'), 404, 'NOT_FOUND', /messages\.default/)
    expectError(await switchQueue('messages.no-such-sender', 'pause'), 404, 'NOT_FOUND')
    expectError(
      await app.inject({ method: 'POST', url: '/api/admin/queues/messages/pause' }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
  })
})

describe('pause and resume', () => {
  it('messages: every sender stops on every worker while sends are still accepted; resume delivers all', async () => {
    // A second worker process, started before the switch: it learns of it as the first does.
    const another = await startTestWorker(world, workerEnv())
    onTestFinished(() => another.close())
    const view = await switched('messages', 'pause', { reason: 'platform outage' })
    expect(view).toMatchObject({
      name: 'messages',
      paused: true,
      held: true,
      switchedBy: 'ana',
      reason: 'platform outage',
    })
    await pausedInRedis('messages')
    await pausedInRedis(senderQueueName(second.id))

    const waiting = [await sendText(keyA), await sendText(keyA), await sendText(keyB)]
    await quiet()
    expect(waiting.filter(reached)).toEqual([])
    const list = (
      await app.inject({ method: 'GET', url: '/api/admin/queues', headers: asAdmin() })
    ).json<QueueList>()
    const all = list.data[0] as QueueView
    expect(all.counts.waiting + (all.counts.prioritized ?? 0) + (all.counts.waitingAdmission ?? 0)).toBe(3)
    expect(list.data.filter((q) => q.kind === 'sender').every((q) => q.held && !q.paused)).toBe(true)
    for (const id of waiting) {
      const status = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${id}`,
        headers: { 'x-api-key': (id === waiting[2] ? keyB : keyA).key },
      })
      expect(status.json().status).toBe('queued')
    }

    // Pausing what is paused changes nothing and records nothing.
    await switched('messages', 'pause', undefined, ADMIN.ops)
    expect((await switched('messages', 'resume', undefined, ADMIN.ops)).paused).toBe(false)
    await allSent(waiting, 'the messages held while delivery was paused')
    const audit = await auditOf('messages')
    expect(audit.map((a) => [a.actor, a.action, a.details.reason])).toEqual([
      ['ana', 'queue.pause', 'platform outage'],
      ['ops', 'queue.resume', null],
    ])
  })

  it('one sender’s queue (messages.default): it waits while the other sender flows', async () => {
    await switched('messages.default', 'pause', { reason: 'number under review' })
    await pausedInRedis('messages')
    const held = await sendText(keyA, 'waits')
    const flowing = await sendText(keyB, 'goes')
    await allSent([flowing], 'the second sender’s message while the default one is paused')
    await quiet()
    expect(reached(held)).toBe(false)
    await switched('messages.default', 'resume')
    await allSent([held], 'the default sender’s message once resumed')
    expect((await auditOf('messages.default')).map((a) => a.action)).toEqual(['queue.pause', 'queue.resume'])
  })

  it('a paused switch survives a worker restart, the registry’s refresh, a sender change and a lost pause', async () => {
    await switched(`messages.${second.id}`, 'pause')
    await switched('messages', 'pause')
    await pausedInRedis('messages')
    await worker.close()
    worker = await startTestWorker(world, workerEnv())
    // A pause lost in Redis (a failover, a resume from elsewhere) is put back at the next refresh
    // (what waits meanwhile may go out in that moment, so nothing waits here).
    await bullQueue('messages').resume()
    await pausedInRedis('messages')
    const held = [await sendText(keyA), await sendText(keyB)]
    // A change of the sender makes every lane reconcile: an active sender still stays held.
    const changed = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${second.id}`,
      headers: asAdmin(),
      payload: { displayName: 'Second line (renamed)' },
    })
    expect(changed.statusCode, changed.body).toBe(200)
    await quiet()
    expect(held.filter(reached)).toEqual([])

    await switched('messages', 'resume')
    await allSent([held[0] as string], 'the default sender’s message once messages resumed')
    await quiet()
    // Its own switch still holds the second sender.
    expect(reached(held[1] as string)).toBe(false)
    await switched(`messages.${second.id}`, 'resume')
    await allSent([held[1] as string], 'the second sender’s message once its queue resumed')
  })

  it('email: the outbox’s e-mails wait while paused and go once resumed; webhooks pause in BullMQ too', async () => {
    const view = await switched('email', 'pause', { reason: 'SMTP provider incident' })
    expect(view).toMatchObject({ kind: 'email', queue: 'email', paused: true, held: true })
    const created = await requestKey(app, { email: 'paused-mail@acme.test' })
    expect((await decide(app, created.id, 'approve')).statusCode).toBe(200)
    await waitFor(
      async () => {
        const list = (
          await app.inject({ method: 'GET', url: '/api/admin/queues', headers: asAdmin() })
        ).json<QueueList>()
        return (list.data.find((q) => q.name === 'email')?.counts.waiting ?? 0) > 0 || undefined
      },
      { what: 'the approval e-mail waiting in the paused email queue' },
    )
    await quiet()
    expect(smtp.messagesTo('paused-mail@acme.test')).toEqual([])
    await switched('email', 'resume')
    await waitFor(() => smtp.messagesTo('paused-mail@acme.test')[0], { what: 'the e-mail once resumed' })

    await switched('webhooks', 'pause')
    expect(await bullQueue('webhooks').isPaused()).toBe(true)
    expect((await switched('webhooks', 'resume')).held).toBe(false)
    expect(await bullQueue('webhooks').isPaused()).toBe(false)
    expect((await auditOf('email')).map((a) => [a.actor, a.action])).toEqual([
      ['ana', 'queue.pause'],
      ['ana', 'queue.resume'],
    ])
    expect((await auditOf('webhooks')).length).toBe(2)
  })
})
