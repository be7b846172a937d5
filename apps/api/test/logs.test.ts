import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import {
  captureLogs,
  rawRequest,
  signWebhook,
  startFakeWhatsApp,
  startSmtpServer,
  startTcpProxy,
  statusWebhook,
  waitFor,
} from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  requestKey,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { LOG_LEVEL: 'trace' })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

it('writes no key value and no admin token to any log line, at the most verbose level', async () => {
  const smtp = await startSmtpServer()
  const workerLogs = captureLogs()
  const worker = await startTestWorker(
    world,
    {
      SMTP_URL: smtp.url,
      OUTBOX_POLL_MS: '50',
      LOG_LEVEL: 'trace',
    },
    workerLogs.stream,
  )
  try {
    const key = await requestKey(app)
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await decide(app, key.id, 'approve')
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await app.inject({
      method: 'GET',
      url: `/api/api-keys/me?key=${key.key.slice(0, 8)}`,
      headers: { 'X-Api-Key': key.key },
    })
    await app.inject({ method: 'GET', url: '/api/admin/api-keys?take=5', headers: asAdmin(ADMIN.ops) })
    await decide(app, key.id, 'revoke', { reason: 'done' })
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await waitFor(() => smtp.messages.length === 2, { what: 'both e-mails' })

    const all = `${app.logs.text()}\n${workerLogs.text()}`
    expect(app.logs.lines.length).toBeGreaterThan(10)
    expect(all).toContain(key.id)
    expect(all).not.toContain(key.key)
    expect(all).not.toContain(key.key.slice(8)) // not even the secret part alone
    expect(all).not.toContain(ADMIN.ana)
    expect(all).not.toContain(ADMIN.ops)
  } finally {
    await worker.close()
    await smtp.close()
  }
})

it('at trace level, parser errors, failed queries and the platform leave no secret and no requester e-mail in any line', async () => {
  const secrets = {
    appSecret: 'trace-app-secret-0123456789',
    verifyToken: 'trace-verify-token-0123456789',
    platformToken: 'EAAG-trace-platform-token-0123456789',
  }
  const url = new URL(world.databaseUrl)
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
  url.host = new URL(proxy.url('postgres')).host
  const traced = await buildTestApp(world, {
    LOG_LEVEL: 'trace',
    DATABASE_URL: url.toString(),
    WHATSAPP_APP_SECRET: secrets.appSecret,
    WHATSAPP_VERIFY_TOKEN: secrets.verifyToken,
  })
  const fake = await startFakeWhatsApp()
  const workerLogs = captureLogs()
  const worker = await startTestWorker(
    world,
    {
      WORKER_QUEUES: 'messages',
      LOG_LEVEL: 'trace',
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: secrets.platformToken,
      WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    },
    workerLogs.stream,
  )
  const email = 'trace-requester@acme.test'
  try {
    await traced.listen({ host: '127.0.0.1', port: 0 })
    const port = (traced.server.address() as AddressInfo).port
    const key = await activeKey(traced, { scopes: SEND_SCOPES, email })
    const keyHash = createHash('sha256').update(key.key).digest('hex')

    // A delivery through the platform, and its signed status webhook.
    const sent = await send(traced, 'send-text', key.key)
    expect(sent.statusCode, sent.body).toBe(202)
    const wamid = await waitFor(() => fake.requests[0]?.platformMessageId, { what: 'the platform call' })
    const webhook = JSON.stringify(
      statusWebhook({ id: wamid, status: 'delivered', timestamp: String(Math.floor(Date.now() / 1000)) }),
    )
    await traced.inject({
      method: 'POST',
      url: '/api/webhooks/whatsapp',
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': signWebhook(webhook, secrets.appSecret),
      },
      payload: webhook,
    })
    await traced.inject({
      method: 'GET',
      url: `/api/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=${secrets.verifyToken}&hub.challenge=1`,
    })

    // Requests the parser refuses, carrying the key and the admin token.
    const credentials = `x-api-key: ${key.key}\r\nAuthorization: Bearer ${ADMIN.ana}\r\n`
    for (const bytes of [
      `POST /api/api-keys/request HTTP/1.1\r\nHost: x\r\n${credentials}Content-Length: abc\r\n\r\n`,
      `GET /api/api-keys/me HTTP/1.1\r\nHost: x\r\n${credentials}X-Note: a\u0000b\r\n\r\n`,
      `FOO /api/admin/api-keys HTTP/1.1\r\nHost: x\r\n${credentials}\r\n`,
      `GET /api/admin/api-keys HTTP/1.1\r\nHost: x\r\n${credentials}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]) {
      expect((await rawRequest(port, bytes)).statusCode).toBeGreaterThanOrEqual(400)
    }

    // Queries that fail with Postgres away: a key request, a decision, a lookup of an unseen key.
    const pending = await requestKey(traced, { email })
    await proxy.cut()
    try {
      const failed = [
        await traced.inject({
          method: 'POST',
          url: '/api/api-keys/request',
          payload: { clientName: 'Acme', email, scopes: ['send:free-text'] },
        }),
        await decide(traced, pending.id, 'approve'),
        await traced.inject({
          method: 'GET',
          url: '/api/api-keys/me',
          headers: { 'x-api-key': pending.key },
        }),
      ]
      for (const res of failed) expect(res.statusCode, res.body).toBe(503)
    } finally {
      await proxy.restore()
    }

    const all = `${traced.logs.text()}\n${workerLogs.text()}`
    expect(all).toContain('client error')
    expect(all).toContain('Failed query') // the failed queries were logged, without their parameters
    expect(all).toContain(wamid)
    for (const [name, secret] of Object.entries({
      ...secrets,
      key: key.key,
      keySecretPart: key.key.slice(8),
      pendingKey: pending.key,
      keyHash,
      pendingKeyHash: createHash('sha256').update(pending.key).digest('hex'),
      adminToken: ADMIN.ana,
      email,
    })) {
      expect(all.includes(secret), `${name} appears in the log`).toBe(false)
    }
  } finally {
    await worker.close()
    await traced.close()
    await fake.close()
    await proxy.close()
  }
})

it("a request's lines carry its request id, at warn (its logger made on its first line) as at info", async () => {
  for (const level of ['warn', 'info'] as const) {
    const logged = await buildTestApp(world, { LOG_LEVEL: level }, (app) => {
      app.get('/test/logs', async (request) => {
        request.log.info({ step: 1 }, 'before the warning')
        request.log.warn({ step: 2 }, 'a warning')
        request.log.child({ part: 'parser' }).error({ step: 3 }, 'from a child')
        return { ok: true }
      })
    })
    try {
      const quiet = await logged.inject({
        method: 'GET',
        url: '/healthz',
        headers: { 'x-request-id': `quiet-${level}` },
      })
      expect(quiet.statusCode).toBe(200)
      const res = await logged.inject({
        method: 'GET',
        url: '/test/logs',
        headers: { 'x-request-id': `logs-${level}` },
      })
      expect(res.statusCode, res.body).toBe(200)
      const lines = logged.logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      const of = (id: string) => lines.filter((line) => line.requestId === id)
      expect(of(`logs-${level}`)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ level: 40, step: 2, msg: 'a warning' }),
          expect.objectContaining({ level: 50, step: 3, part: 'parser', msg: 'from a child' }),
        ]),
      )
      const infos = of(`logs-${level}`).filter((line) => line.level === 30)
      if (level === 'warn') {
        expect(infos).toEqual([])
        expect(of(`quiet-${level}`)).toEqual([])
      } else {
        expect(infos.map((line) => line.msg)).toEqual([
          'incoming request',
          'before the warning',
          'request completed',
        ])
        expect(of(`quiet-${level}`).map((line) => line.msg)).toEqual([
          'incoming request',
          'request completed',
        ])
      }
    } finally {
      await logged.close()
    }
  }
})
