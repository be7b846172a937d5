import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { inboundMessage, messageWebhook, startWebhookReceiver, type WebhookReceiver } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

const APP_SECRET = 'app-secret-0123456789'
const SANDBOX_NUMBER = '100000000000001'

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let receiver: WebhookReceiver
let acme: { id: string; key: string }
let beta: { id: string; key: string }

const exportOf = (phone: string, key = acme.key) =>
  app.inject({
    url: `/api/third-party/recipients/${encodeURIComponent(phone)}/export`,
    headers: { 'x-api-key': key },
  })
const linesOf = (body: string) =>
  body
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown> & { kind: string })

async function sent(phone: string, text: string, key = acme.key) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key },
    payload: { phone, text },
  })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json<{ messageId: string }>()
  await untilMessageStatus(app, key, messageId, 'sent')
  return messageId
}

beforeAll(async () => {
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  worker = await startTestWorker(world)
  const scopes = ['send:free-text', 'read:messages', 'manage:webhooks', 'manage:data']
  beta = await activeKey(app, { scopes, clientName: 'Beta' })
  acme = await activeKey(app, { scopes })
  await addWebhookEndpoint(app, acme.key, {
    url: receiver.url,
    events: ['message.sent', 'message.received', 'recipient.opted_out'],
  })
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await world?.close()
})

describe('a recipient export', () => {
  it("holds each of the key's records about them, one JSON line each with its kind, and nobody else's", async () => {
    const phone = '+5511955550001'
    await sent(phone, 'from beta', beta.key)
    const ids = [await sent(phone, 'Your order shipped'), await sent(phone, 'It arrives today')]
    await sent('+5511955550002', 'someone else')
    const reply = messageWebhook(SANDBOX_NUMBER, inboundMessage('text', { phone }, { text: 'Thanks!' }))
    expect((await postPlatformWebhook(app, reply, APP_SECRET)).statusCode).toBe(200)
    const stop = messageWebhook(SANDBOX_NUMBER, inboundMessage('text', { phone }, { text: 'STOP' }))
    expect((await postPlatformWebhook(app, stop, APP_SECRET)).statusCode).toBe(200)

    const res = await exportOf(phone)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/)
    const lines = linesOf(res.body)
    const of = (kind: string) => lines.filter((l) => l.kind === kind)
    expect(
      of('message')
        .map((l) => [l.messageId, (l.payload as { text: string }).text])
        .sort(),
    ).toEqual(
      [
        [ids[0], 'Your order shipped'],
        [ids[1], 'It arrives today'],
      ].sort(),
    )
    expect(of('message').every((l) => l.phone === phone && l.status === 'sent')).toBe(true)
    expect(
      of('inbound_message')
        .map((l) => (l.content as { text: string }).text)
        .sort(),
    ).toEqual(['STOP', 'Thanks!'])
    expect(
      of('event')
        .map((l) => l.type)
        .sort(),
    ).toEqual(['message.received', 'message.received', 'message.sent', 'message.sent', 'recipient.opted_out'])
    expect(of('suppression')).toMatchObject([{ recipient: phone, scope: 'all', source: 'keyword' }])
    expect(lines).toHaveLength(10)
    // The request's log lines name the route, never the phone in its path.
    expect(app.logs.lines.filter((line) => line.includes('recipients/'))).not.toEqual([])
    expect(app.logs.lines.filter((line) => line.includes(phone.slice(1)))).toEqual([])
    expect(res.body).not.toContain('from beta')
    expect(res.body).not.toContain('someone else')

    // Beta sees its own message to them only.
    const theirs = linesOf((await exportOf(phone, beta.key)).body)
    expect(
      theirs.filter((l) => l.kind === 'message').map((l) => (l.payload as { text: string }).text),
    ).toEqual(['from beta'])
  })

  it('is refused for a malformed phone and without manage:data, with the error body', async () => {
    expectError(await exportOf('5511955550001'), 400, 'VALIDATION_ERROR')
    expectError(await exportOf('not-a-phone'), 400, 'VALIDATION_ERROR')
    const reader = await activeKey(app, { scopes: ['read:messages'] })
    expectError(await exportOf('+5511955550001', reader.key), 403, 'INSUFFICIENT_SCOPE')
  })

  it('streams 100,000 messages to a slow reader without holding them in the server’s memory', async () => {
    const phone = '+5511955559999'
    const total = 100_000
    // A key of its own, without an endpoint: its messages make no events.
    const bulk = await activeKey(app, { scopes: ['manage:data'], clientName: 'Bulk' })
    // 100,000 sent messages of ~300 bytes of text each, straight into the table (the export's cost
    // is in the reading, not the sending).
    await world.sql`
      insert into messages (id, api_key_id, type, phone, payload, sender_id, sender_phone_number_id, status,
        attempts, accepted_at, sent_at, updated_at)
      select gen_random_uuid(), ${bulk.id}, 'text', ${phone},
        jsonb_build_object('phone', ${phone}::text, 'text', repeat('lorem ipsum ', 25) || i),
        'default', ${SANDBOX_NUMBER}, 'sent', 1, now() - make_interval(secs => i),
        now() - make_interval(secs => i) + interval '1 second', now()
      from generate_series(1, ${total}) i`

    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const heap = () => {
      gc()
      return process.memoryUsage().heapUsed
    }
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const before = heap()
    let peak = 0
    let bytes = 0
    let lines = 0
    let sampledAt = 0
    await new Promise<void>((resolve, reject) => {
      const req = request(
        {
          port,
          path: `/api/third-party/recipients/${encodeURIComponent(phone)}/export`,
          headers: { 'x-api-key': bulk.key },
        },
        (res) => {
          expect(res.statusCode).toBe(200)
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length
            for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++
            // A slow reader: every ~8 MB it stops for a while, and the server's memory is read.
            if (bytes - sampledAt > 8_000_000) {
              sampledAt = bytes
              res.pause()
              setTimeout(() => {
                peak = Math.max(peak, heap() - before)
                res.resume()
              }, 100)
            }
          })
          res.on('end', resolve)
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end()
    })
    expect(lines).toBe(total)
    // The whole body is ~80 MB; held at once (rows, then lines) it measured +125 MB of live heap
    // while the reader waited. A page at a time is a MB or two.
    expect(bytes).toBeGreaterThan(40_000_000)
    expect(peak).toBeLessThan(25_000_000)
  }, 60_000)
})
