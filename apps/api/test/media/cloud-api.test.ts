import { createServer } from 'node:net'
import type { MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { filePart, jpeg, png, sha256, upload } from './images.ts'

const TOKEN = 'EAAG-media-upload-token-0123456789'
const PHONE_NUMBER_ID = '106540352242922'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let key: string
beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const platform = {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: TOKEN,
    WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
  }
  app = await buildTestApp(world, { ...platform, LOG_LEVEL: 'trace', MEDIA_UPLOAD_TIMEOUT_MS: '500' })
  worker = await startTestWorker(world, { ...platform, WORKER_QUEUES: 'messages' })
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const mediaCount = async () => Number((await world.sql`select count(*)::int as n from media`)[0]?.n)

describe('uploading to the Cloud API', () => {
  it("sends the file as the Cloud API takes it and answers with the platform's id; only the id is kept", async () => {
    const bytes = png(3)
    const res = await upload(app, key, [filePart(bytes, 'holiday.png', 'image/png')])
    expect(res.statusCode, res.body).toBe(201)
    const seen = fake.uploads.at(-1)
    expect(seen?.path).toBe(`/v21.0/${PHONE_NUMBER_ID}/media`)
    expect(seen?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(seen?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/)
    expect(seen?.fields).toEqual({ messaging_product: 'whatsapp', type: 'image/png' })
    expect(seen?.file?.type).toBe('image/png')
    expect(seen?.file?.bytes.equals(bytes)).toBe(true)
    expect(seen?.mediaId).toMatch(/^[0-9]+$/)
    expect(res.json()).toEqual({
      mediaId: seen?.mediaId,
      kind: 'image',
      mimeType: 'image/png',
      size: bytes.length,
      sha256: sha256(bytes),
    })
    const [row] = await world.sql`select * from media where id = ${seen?.mediaId ?? ''}`
    expect(row).toMatchObject({
      mime_type: 'image/png',
      size: bytes.length,
      sha256: sha256(bytes),
      data: null,
    })
  })

  it('then send-image with that mediaId is accepted and delivered by the worker with it', async () => {
    const { mediaId } = (await upload(app, key, [filePart(jpeg(), 'a.jpg', 'image/jpeg')])).json()
    expect(fake.uploads.at(-1)?.fields.type).toBe('image/jpeg')
    const accepted = await send(app, 'send-image', key, {
      phone: '+5511987654321',
      image: { mediaId, text: 'Your receipt' },
    })
    expect(accepted.statusCode, accepted.body).toBe(202)
    const { messageId } = accepted.json()
    const view = await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/third-party/messages/${messageId}`,
          headers: { 'x-api-key': key },
        })
        const current = res.json<MessageView>()
        return current.status === 'sent' ? current : undefined
      },
      { what: 'the image to be sent' },
    )
    const delivered = fake.requests.find((r) => r.messageId === messageId)
    expect(delivered?.body).toMatchObject({ type: 'image', image: { id: mediaId, caption: 'Your receipt' } })
    expect(view.platformMessageId).toBe(delivered?.platformMessageId)
  })
})

describe("the platform's failures, as the error body and nothing stored", () => {
  it.each([
    [
      'an expired token',
      502,
      'PLATFORM_ERROR',
      graphError(190, `Error validating access token ${TOKEN}`, 401),
    ],
    ['a bad parameter', 502, 'PLATFORM_ERROR', graphError(100, 'Invalid parameter')],
    ['an answer without an id', 502, 'PLATFORM_ERROR', { status: 200, body: { ok: true } }],
    ['an id send-image could not take', 502, 'PLATFORM_ERROR', { status: 200, body: { id: 'a b\u0000' } }],
    [
      'a 500',
      503,
      'SERVICE_UNAVAILABLE',
      { status: 500, body: { error: { code: 2, message: 'Service temporarily unavailable' } } },
    ],
    ["a proxy's error page", 503, 'SERVICE_UNAVAILABLE', { status: 502, body: '<html>Bad Gateway</html>' }],
    ['throttling', 503, 'SERVICE_UNAVAILABLE', graphError(80007, 'Rate limit hit')],
    ['no answer in time', 503, 'SERVICE_UNAVAILABLE', { status: 200, body: { id: '1' }, delayMs: 1500 }],
  ] as const)('%s: %i %s', async (_, status, code, answer) => {
    const before = await mediaCount()
    fake.scriptUploads(answer)
    const res = await upload(app, key, [filePart(png())])
    const body = expectError(res, status, code)
    expect(body.message).not.toContain(TOKEN)
    if (status === 503) expect(res.headers['retry-after']).toBe('1')
    expect(await mediaCount()).toBe(before)
  })

  it('a 429 with Retry-After: 503 passing the wait on', async () => {
    fake.scriptUploads({ status: 429, headers: { 'retry-after': '7' }, body: { error: { code: 4 } } })
    const res = await upload(app, key, [filePart(png())])
    expectError(res, 503, 'SERVICE_UNAVAILABLE')
    expect(res.headers['retry-after']).toBe('7')
  })

  it('a platform that cannot be reached: 503', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number }
        probe.close(() => resolve(port))
      })
    })
    const away = await buildTestApp(world, {
      WHATSAPP_API_URL: `http://127.0.0.1:${closedPort}/v21.0`,
      WHATSAPP_ACCESS_TOKEN: TOKEN,
      WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    })
    try {
      const before = await mediaCount()
      expectError(await upload(away, key, [filePart(png())]), 503, 'SERVICE_UNAVAILABLE')
      expect(await mediaCount()).toBe(before)
      expect(away.logs.text()).not.toContain(TOKEN)
    } finally {
      await away.close()
    }
  })

  it('the access token is in no log line, at trace level, after all of the above', () => {
    expect(app.logs.lines.length).toBeGreaterThan(20)
    expect(app.logs.text()).toContain('media upload: the platform refused it')
    // The fake's error message above quoted the token: the line kept, the token censored.
    expect(app.logs.text()).toContain('Error validating access token [redacted]')
    expect(app.logs.text()).not.toContain(TOKEN)
    expect(app.logs.text()).not.toContain(TOKEN.slice(5))
  })
})
