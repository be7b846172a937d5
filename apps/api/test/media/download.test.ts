import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, messageWebhook, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { jpeg, sha256 } from './images.ts'
import { pdf } from './samples.ts'

// Inbound media, end to end: a key sends to a phone through the worker and the fake Cloud API,
// the user answers with a picture (a signed webhook), and the key the answer was routed to
// downloads the picture through the API, fetched from the platform with the number's token.
const APP_SECRET = 'whatsapp-app-secret-for-media'
const TOKEN = 'EAAG-inbound-media-token-0123456789'
const NUMBER = '106540352242922'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
type Key = { id: string; key: string }
let acme: Key
let globex: Key
beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  // The platform's media answer only this number's token.
  fake.number(NUMBER, { token: TOKEN })
  const platform = {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: TOKEN,
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
  }
  app = await buildTestApp(world, { ...platform, WHATSAPP_APP_SECRET: APP_SECRET })
  worker = await startTestWorker(world, { ...platform, WORKER_QUEUES: 'messages' })
  acme = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
  globex = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

/** A text from `key` to `phone` through the worker; resolves once the platform took it. */
async function sendTo(key: Key, phone: string) {
  const res = await send(app, 'send-text', key.key, { phone, text: 'Send us a photo of the receipt' })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json()
  await waitFor(
    async () => {
      const view = (
        await app.inject({
          method: 'GET',
          url: `/api/third-party/messages/${messageId}`,
          headers: { 'x-api-key': key.key },
        })
      ).json<MessageView>()
      return view.status === 'sent' ? view : undefined
    },
    { what: `message ${messageId} to be sent` },
  )
}

let sequence = 0
/** The user at `phone` answers with media of `type`, as Meta reports it. */
async function answerWith(phone: string, type: string, body: Record<string, unknown>) {
  const message = {
    from: phone.slice(1),
    id: `wamid.media-${++sequence}.${Date.now()}`,
    timestamp: String(Math.floor(Date.now() / 1000)),
    type,
    [type]: body,
  }
  const res = await postPlatformWebhook(app, messageWebhook(NUMBER, message), APP_SECRET)
  expect(res.statusCode, res.body).toBe(200)
}

const download = (key: Key | string, mediaId: string) =>
  app.inject({
    method: 'GET',
    url: `/api/third-party/media/${encodeURIComponent(mediaId)}/content`,
    headers: { 'x-api-key': typeof key === 'string' ? key : key.key },
  })

describe("GET /api/third-party/media/{id}/content: an inbound message's media", () => {
  const photo = jpeg('a receipt, photographed')
  let photoId: string

  beforeAll(async () => {
    photoId = fake.media.add(photo, 'image/jpeg', { token: TOKEN })
    await sendTo(acme, '+5511911110001')
    await answerWith('+5511911110001', 'image', { id: photoId, mime_type: 'image/jpeg', sha256: 'x' })
  })

  it('the key the answer was routed to gets the bytes, with the type and length the platform gave', async () => {
    const res = await download(acme, photoId)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['content-type']).toBe('image/jpeg')
    expect(res.headers['content-length']).toBe(String(photo.length))
    // Never rendered on the API's (the console's) origin: a download, not sniffed, sandboxed.
    expect(res.headers['content-disposition']).toMatch(/^attachment\b/)
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['content-security-policy']).toBe('sandbox')
    expect(sha256(res.rawPayload)).toBe(sha256(photo))
    // The lookup and the download both went with the receiving number's token.
    const reads = fake.media.reads.filter((r) => r.mediaId === photoId)
    expect(reads.map((r) => [r.step, r.status])).toEqual([
      ['lookup', 200],
      ['download', 200],
    ])
    expect(reads.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true)
  })

  it('a document streams the same way', async () => {
    const file = pdf(300_000)
    const id = fake.media.add(file, 'application/pdf', { token: TOKEN })
    await answerWith('+5511911110001', 'document', { id, mime_type: 'application/pdf', filename: 'nf.pdf' })
    const res = await download(acme, id)
    expect(res.statusCode, res.body.slice(0, 200)).toBe(200)
    expect(res.headers['content-type']).toBe('application/pdf')
    expect(res.rawPayload.equals(file)).toBe(true)
  })

  it("another key's request is 404, as if the media did not exist; nothing is asked of the platform", async () => {
    const reads = fake.media.reads.length
    expectError(await download(globex, photoId), 404, 'NOT_FOUND', /No inbound media/)
    expect(fake.media.reads.length).toBe(reads)
  })

  it('an unknown id is 404; an id that is no id is 400', async () => {
    expectError(await download(acme, '999999999999999'), 404, 'NOT_FOUND', /No inbound media/)
    expectError(await download(acme, 'a b'), 400, 'VALIDATION_ERROR')
  })

  it('media the platform no longer has (after 7 days) is 404, saying so', async () => {
    const id = fake.media.add(jpeg('gone'), 'image/jpeg', { token: TOKEN })
    await answerWith('+5511911110001', 'image', { id, mime_type: 'image/jpeg' })
    fake.media.expire(id)
    expectError(await download(acme, id), 404, 'NOT_FOUND', /no longer has this media/)
  })

  it('a key without read:messages is 403', async () => {
    const sender = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await download(sender.key, photoId), 403, 'INSUFFICIENT_SCOPE', /read:messages/)
  })

  it("served with the type Meta's description names, never the media host's own Content-Type", async () => {
    // The media host answers text/html for these bytes; the Graph API's description says image/jpeg.
    const id = fake.media.add(Buffer.from('<script>alert(document.cookie)</script>'), 'image/jpeg', {
      token: TOKEN,
    })
    fake.media.downloadContentType = 'text/html'
    try {
      await answerWith('+5511911110001', 'image', { id, mime_type: 'image/jpeg' })
      const res = await download(acme, id)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.headers['content-type']).toBe('image/jpeg')
      expect(res.headers['content-disposition']).toMatch(/^attachment\b/)
      expect(res.headers['content-security-policy']).toBe('sandbox')
    } finally {
      fake.media.downloadContentType = undefined
    }
    // A description naming a type no WhatsApp media has is served as bytes, nothing more.
    const html = fake.media.add(Buffer.from('<html></html>'), 'text/html', { token: TOKEN })
    await answerWith('+5511911110001', 'document', { id: html, mime_type: 'text/html' })
    const res = await download(acme, html)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['content-type']).toBe('application/octet-stream')
  })

  it('is fetched only from the media hosts: a url elsewhere is 502, and the token never goes there', async () => {
    const strict = await buildTestApp(world, {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: TOKEN,
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      WHATSAPP_APP_SECRET: APP_SECRET,
      // Meta's only, as in production: the fake's 127.0.0.1 is not a media host.
      WHATSAPP_MEDIA_HOSTS: 'lookaside.fbsbx.com',
    })
    try {
      const id = fake.media.add(jpeg('elsewhere'), 'image/jpeg', { token: TOKEN })
      await answerWith('+5511911110001', 'image', { id, mime_type: 'image/jpeg' })
      const res = await strict.inject({
        method: 'GET',
        url: `/api/third-party/media/${id}/content`,
        headers: { 'x-api-key': acme.key },
      })
      expectError(res, 502, 'PLATFORM_ERROR', /not one of its media hosts/)
      expect(fake.media.reads.filter((r) => r.mediaId === id).map((r) => r.step)).toEqual(['lookup'])
    } finally {
      await strict.close()
    }
  })

  it('follows a redirect on a media host, with the token', async () => {
    const bytes = jpeg('moved')
    const id = fake.media.add(bytes, 'image/jpeg', { token: TOKEN })
    fake.media.redirectDownloadsTo = `${new URL(fake.url).origin}/_fake/media/${id}/download?redirected=1`
    try {
      await answerWith('+5511911110001', 'image', { id, mime_type: 'image/jpeg' })
      const res = await download(acme, id)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.rawPayload.equals(bytes)).toBe(true)
      const reads = fake.media.reads.filter((r) => r.mediaId === id)
      expect(reads.map((r) => [r.step, r.status])).toEqual([
        ['lookup', 200],
        ['download', 302],
        ['download', 200],
      ])
    } finally {
      fake.media.redirectDownloadsTo = undefined
    }
  })

  it('never follows a redirect to another host with the token', async () => {
    const elsewhere: Array<string | undefined> = []
    const other = createServer((req, res) => {
      elsewhere.push(req.headers.authorization)
      res.writeHead(200, { 'content-type': 'image/jpeg' }).end('x')
    })
    await new Promise<void>((resolve) => other.listen(0, '0.0.0.0', resolve))
    const port = (other.address() as AddressInfo).port
    const id = fake.media.add(jpeg('redirected'), 'image/jpeg', { token: TOKEN })
    // Another host (127.0.0.2 is this machine too, but not a media host; 127.0.0.1 is, here).
    fake.media.redirectDownloadsTo = `http://127.0.0.2:${port}/stolen`
    try {
      await answerWith('+5511911110001', 'image', { id, mime_type: 'image/jpeg' })
      expectError(
        await download(acme, id),
        502,
        'PLATFORM_ERROR',
        /on 127\.0\.0\.2, not one of its media hosts/,
      )
      expect(elsewhere).toEqual([])
    } finally {
      fake.media.redirectDownloadsTo = undefined
      other.close()
    }
  })

  it('the access token is in no answer and no log line', () => {
    expect(app.logs.text()).not.toContain(TOKEN)
  })
})

describe('with the sandbox, which keeps no inbound media', () => {
  it('answers 404 saying only the Cloud API has the bytes', async () => {
    const sandbox = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
    try {
      // The answer was routed to acme above; the sandbox app reads the same database.
      const [row] = await world.sql<{ id: string }[]>`
        select content->'media'->>'id' as id from inbound_messages
        where api_key_id = ${acme.id} and content ? 'media' limit 1`
      const res = await sandbox.inject({
        method: 'GET',
        url: `/api/third-party/media/${row?.id}/content`,
        headers: { 'x-api-key': acme.key },
      })
      expectError(res, 404, 'NOT_FOUND', /sandbox platform keeps no inbound media/)
    } finally {
      await sandbox.close()
    }
  })
})
