import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  ADMIN,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '@dispatch/api/test/helpers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDispatchClient, type DispatchClient, DispatchError } from '../src/index.ts'

const phone = '+5511987654321'
let world: TestWorld
let app: TestApp
let worker: Awaited<ReturnType<typeof startTestWorker>>
let baseUrl: string
const closers: (() => Promise<unknown>)[] = []

const listen = async (server: TestApp | Server) => {
  const http = 'inject' in server ? server.server : server
  if ('inject' in server) await server.listen({ host: '127.0.0.1', port: 0 })
  else await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}`
}

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  baseUrl = await listen(app)
  worker = await startTestWorker(world)
})
afterAll(async () => {
  for (const close of closers) await close()
  await worker.close()
  await app.close()
  await world.close()
})

/** What a sender does first: request a key, which an admin (here, the test) approves. */
async function approvedSender(
  scopes = SEND_SCOPES,
  url = baseUrl,
): Promise<{ id: string; key: string; client: DispatchClient }> {
  const anonymous = createDispatchClient({ baseUrl: url })
  const created = await anonymous.POST('/api/api-keys/request', {
    body: { clientName: 'Acme', email: 'ops@acme.test', scopes },
  })
  const admin = createDispatchClient({ baseUrl: url, adminToken: ADMIN.ana })
  // An approval takes no body: the document says so, and the client sends none.
  const approved = await admin.POST('/api/admin/api-keys/{id}/approve', {
    params: { path: { id: created.id } },
  })
  expect(approved.status).toBe('approved')
  return { ...created, client: createDispatchClient({ baseUrl: url, apiKey: created.key }) }
}

async function waitUntilSent(client: DispatchClient, messageId: string) {
  for (let i = 0; i < 100; i++) {
    const message = await client.GET('/api/third-party/messages/{messageId}', {
      params: { path: { messageId } },
    })
    if (message.status === 'sent') return message
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`message ${messageId} was not sent`)
}

describe('a sender using @dispatch/client against the listening API', () => {
  it('requests a key, has it approved, sends a text, a template and an image, and reads each one sent', async () => {
    const { client } = await approvedSender()
    const accepted = [
      await client.POST('/api/third-party/messages/send-text', { body: { phone, text: 'Welcome to Acme!' } }),
      await client.POST('/api/third-party/messages/send-template', {
        body: {
          phone,
          templateId: 'order_shipped',
          language: 'pt_BR',
          variables: { '1': 'Ana', '2': 'BR-1042' },
          headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
          buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
        },
      }),
      await client.POST('/api/third-party/messages/send-image', {
        body: { phone, image: { mediaId: 'media-456', text: 'Your invoice' } },
      }),
    ]
    expect(accepted.map((a) => [a.type, a.status])).toEqual([
      ['text', 'queued'],
      ['template', 'queued'],
      ['image', 'queued'],
    ])
    for (const { messageId, type } of accepted) {
      const message = await waitUntilSent(client, messageId)
      expect(message).toMatchObject({ messageId, type, phone, status: 'sent', attempts: 1 })
      expect(message.platformMessageId).toEqual(expect.any(String))
    }
  })

  it('lists the messages it sent, a status list going as repeated query parameters', async () => {
    const { client } = await approvedSender()
    const { messageId } = await client.POST('/api/third-party/messages/send-text', {
      body: { phone, text: 'Listed' },
    })
    await waitUntilSent(client, messageId)
    const listed = await client.GET('/api/third-party/messages', {
      params: {
        query: { order: 'DESC', page: 1, take: 10, orderField: 'createdAt', status: ['sent', 'failed'] },
      },
    })
    expect(listed).toMatchObject({
      itemCount: 1,
      itemCountExact: true,
      data: [{ messageId, status: 'sent' }],
    })
  })

  it('throws a typed DispatchError for a 400 and a 403', async () => {
    const { client } = await approvedSender(['send:free-text'])
    const invalid = await client
      .POST('/api/third-party/messages/send-text', { body: { phone: 'not a phone', text: 'hi' } })
      .catch((error: unknown) => error)
    expect(invalid).toBeInstanceOf(DispatchError)
    expect(invalid).toMatchObject({ statusCode: 400, errorCode: 'VALIDATION_ERROR', error: 'Bad Request' })
    expect((invalid as DispatchError).message).toMatch(/phone/)

    const forbidden = await client
      .POST('/api/third-party/messages/send-image', { body: { phone, image: { mediaId: 'media-456' } } })
      .catch((error: unknown) => error)
    expect(forbidden).toMatchObject({ statusCode: 403, errorCode: 'INSUFFICIENT_SCOPE' })
    expect((forbidden as DispatchError).requestId).toEqual(expect.any(String))
  })

  it('retries a 503 after its Retry-After with the same Idempotency-Key, so the send is accepted once', async () => {
    const { id, key, client: direct } = await approvedSender()
    // A proxy that passes the first send on to the API but answers 503 (Retry-After: 1) in its
    // place, as a load balancer might after the API accepted it: the retry must not send twice.
    const seen: { key: string | undefined; at: number; replayed: string | null }[] = []
    const proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const forwarded = await fetch(`${baseUrl}${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'connection') as [
          string,
          string,
        ][],
        ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
      })
      const body = await forwarded.text()
      const key = req.headers['idempotency-key'] as string | undefined
      seen.push({ key, at: Date.now(), replayed: forwarded.headers.get('idempotent-replayed') })
      if (seen.length === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' })
        res.end(
          JSON.stringify({
            message: 'lost',
            errorCode: 'SERVICE_UNAVAILABLE',
            statusCode: 503,
            error: 'Service Unavailable',
          }),
        )
        return
      }
      res.writeHead(forwarded.status, { 'content-type': 'application/json' })
      res.end(body)
    })
    const proxyUrl = await listen(proxy)
    closers.push(() => new Promise((resolve) => proxy.close(resolve)))

    const client = createDispatchClient({ baseUrl: proxyUrl, apiKey: key })
    const accepted = await client.POST('/api/third-party/messages/send-text', {
      body: { phone, text: 'once' },
    })

    expect(seen).toHaveLength(2)
    expect(seen[0]?.key).toMatch(/^[0-9a-f-]{36}$/)
    expect(seen[1]?.key).toBe(seen[0]?.key)
    expect(seen[1]?.replayed).toBe('true')
    expect((seen[1]?.at ?? 0) - (seen[0]?.at ?? 0)).toBeGreaterThanOrEqual(950)
    await waitUntilSent(direct, accepted.messageId)
    const [row] = await world.sql<{ count: number }[]>`
      select count(*)::int as count from messages where api_key_id = ${id}`
    expect(row?.count).toBe(1)
  })

  it("retries the API's own 429 after its Retry-After, and throws RATE_LIMITED once retries are off", async () => {
    const limited = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '1' })
    closers.push(() => limited.close())
    const url = await listen(limited)
    const { key } = await approvedSender(SEND_SCOPES, url)
    const client = createDispatchClient({ baseUrl: url, apiKey: key })
    const impatient = createDispatchClient({ baseUrl: url, apiKey: key, retries: 0 })

    await client.POST('/api/third-party/messages/send-text', { body: { phone, text: 'first' } })
    const refused = await impatient
      .POST('/api/third-party/messages/send-text', { body: { phone, text: 'refused' } })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({ statusCode: 429, errorCode: 'RATE_LIMITED', retryAfterSeconds: 1 })

    const started = Date.now()
    const accepted = await client.POST('/api/third-party/messages/send-text', {
      body: { phone, text: 'later' },
    })
    expect(accepted.status).toBe('queued')
    expect(Date.now() - started).toBeGreaterThanOrEqual(500)
  })
})
