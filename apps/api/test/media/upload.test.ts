import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { filePart, GIF, jpeg, jpegOfSize, multipart, png, sha256, upload } from './images.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  key = await activeKey(app, { scopes: SEND_SCOPES })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const mediaCount = async () => Number((await world.sql`select count(*)::int as n from media`)[0]?.n)

describe('uploading to the sandbox', () => {
  it('takes a PNG: 201 with its type, size and SHA-256, the bytes kept under a new UUID', async () => {
    const bytes = png(4)
    const res = await upload(app, key.key, [filePart(bytes)])
    expect(res.statusCode, res.body).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      mediaId: expect.stringMatching(UUID),
      kind: 'image',
      mimeType: 'image/png',
      size: bytes.length,
      sha256: sha256(bytes),
    })
    const [row] = await world.sql`select * from media where id = ${body.mediaId}`
    expect(row).toMatchObject({
      api_key_id: key.id,
      mime_type: 'image/png',
      size: bytes.length,
      sha256: sha256(bytes),
    })
    expect(Buffer.from(row?.data).equals(bytes)).toBe(true)
  })

  it('knows a JPEG by its bytes, whatever its name and declared type say', async () => {
    const bytes = jpeg()
    const res = await upload(app, key.key, [filePart(bytes, 'photo.png', 'image/png')])
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json()).toMatchObject({ mimeType: 'image/jpeg', size: bytes.length, sha256: sha256(bytes) })
  })

  it('gives a mediaId that send-image takes', async () => {
    const { mediaId } = (await upload(app, key.key, [filePart(png())])).json()
    const res = await send(app, 'send-image', key.key, {
      phone: '+5511987654321',
      image: { mediaId, text: 'hi' },
    })
    expect(res.statusCode, res.body).toBe(202)
  })
})

describe('refusals, with the error body and nothing stored', () => {
  it.each([
    ['a GIF', GIF, 'cat.gif', 'image/gif'],
    [
      // Text is a document now (media-kinds.test.ts); a program is nothing WhatsApp takes.
      'an executable named .png',
      Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01\x00', 'latin1'), Buffer.alloc(120)]),
      'photo.png',
      'image/png',
    ],
    [
      'a PNG signature on text',
      Buffer.concat([png().subarray(0, 8), Buffer.from('and then text')]),
      'a.png',
      'image/png',
    ],
  ])('%s: 415 UNSUPPORTED_MEDIA_TYPE', async (_, bytes, filename, type) => {
    const before = await mediaCount()
    const res = await upload(app, key.key, [filePart(bytes, filename, type)])
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', /JPEG or PNG/)
    expect(await mediaCount()).toBe(before)
  })

  it.each<[string, Parameters<typeof upload>[2], RegExp]>([
    ['no file', [], /body\.file is required/],
    ['only a text field', [['caption', 'hello']], /unknown field "caption"/],
    ['the file as text', [['file', 'iVBORw0KGgo=']], /body\.file must be a file/],
    [
      'the file under another name',
      [['image', { bytes: png(), filename: 'a.png' }]],
      /in the field "file", not "image"/,
    ],
    ['two files', [filePart(png()), filePart(jpeg(), 'b.jpg', 'image/jpeg')], /more than one file/],
    ['a text field beside the file', [filePart(png()), ['type', 'image/png']], /unknown field "type"/],
    ['an empty file', [filePart(Buffer.alloc(0))], /body\.file is empty/],
    ['a field name with a NUL', [['a\u0000b', 'x']], /unknown field "a\\u0000b"/],
  ])('%s: 400 VALIDATION_ERROR', async (_, parts, message) => {
    const before = await mediaCount()
    expectError(await upload(app, key.key, parts), 400, 'VALIDATION_ERROR', message)
    expect(await mediaCount()).toBe(before)
  })

  it('a body that is not multipart: 415 naming multipart/form-data; none at all: 400', async () => {
    const headers = { 'x-api-key': key.key }
    for (const [contentType, payload] of [
      ['application/json', '{"file":"x"}'],
      ['text/plain', 'hello'],
      ['application/octet-stream', png().toString('latin1')],
      ['multipart/mixed; boundary=x', '--x--'],
    ] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/third-party/media',
        headers: { ...headers, 'content-type': contentType },
        payload,
      })
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', /multipart\/form-data/)
    }
    const empty = await app.inject({ method: 'POST', url: '/api/third-party/media', headers })
    expectError(empty, 400, 'VALIDATION_ERROR', /multipart\/form-data/)
  })

  it('a malformed or cut-short multipart body: 400', async () => {
    const { payload, contentType } = await multipart([filePart(png())])
    for (const [type, body] of [
      [contentType, payload.subarray(0, payload.length - 20)],
      ['multipart/form-data', payload],
      [contentType, Buffer.from('garbage without any boundary')],
    ] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/third-party/media',
        headers: { 'x-api-key': key.key, 'content-type': type },
        payload: body,
      })
      expect(res.statusCode, `${type}: ${res.body}`).toBe(400)
      expectError(res, 400, 'VALIDATION_ERROR')
    }
  })

  it('no key: 401; a key without send:image: 403', async () => {
    expectError(await upload(app, undefined, [filePart(png())]), 401, 'API_KEY_MISSING')
    const textOnly = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await upload(app, textOnly.key, [filePart(png())]), 403, 'INSUFFICIENT_SCOPE', /send:image/)
  })

  it('other routes still take JSON only: a multipart send is 415', async () => {
    const { payload, contentType } = await multipart([
      ['phone', '+5511987654321'],
      ['text', 'hi'],
    ])
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-text',
      headers: { 'x-api-key': key.key, 'content-type': contentType },
      payload,
    })
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })
})

describe('MEDIA_MAX_BYTES', () => {
  const LIMIT = 2048
  let small: TestApp
  beforeAll(async () => {
    small = await buildTestApp(world, { MEDIA_MAX_BYTES: String(LIMIT) })
  })
  afterAll(async () => {
    await small?.close()
  })

  it('takes a file of exactly the limit, and refuses one byte more with 413 PAYLOAD_TOO_LARGE', async () => {
    const exact = jpegOfSize(LIMIT)
    const res = await upload(small, key.key, [filePart(exact, 'a.jpg', 'image/jpeg')])
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json().size).toBe(LIMIT)

    const before = await mediaCount()
    const over = await upload(small, key.key, [filePart(jpegOfSize(LIMIT + 1), 'a.jpg', 'image/jpeg')])
    expectError(over, 413, 'PAYLOAD_TOO_LARGE', /larger than 2048 bytes/)
    expect(await mediaCount()).toBe(before)
  })

  it('over HTTP, a large upload is answered 413 without reading it all, and the connection closed', async () => {
    await small.listen({ host: '127.0.0.1', port: 0 })
    const { port } = small.server.address() as { port: number }
    const closed = new Promise<number>((resolve) =>
      small.server.once('connection', (socket) => socket.on('close', () => resolve(socket.bytesRead))),
    )
    const { payload, contentType } = await multipart([filePart(jpegOfSize(60_000), 'big.jpg', 'image/jpeg')])
    const big = Buffer.concat([
      payload.subarray(0, 1000),
      Buffer.alloc(20 * 1024 * 1024),
      payload.subarray(1000),
    ])
    const res = await fetch(`http://127.0.0.1:${port}/api/third-party/media`, {
      method: 'POST',
      headers: { 'x-api-key': key.key, 'content-type': contentType },
      body: big,
    })
    expect(res.status).toBe(413)
    expect(res.headers.get('connection')).toBe('close')
    expect(((await res.json()) as { errorCode: string }).errorCode).toBe('PAYLOAD_TOO_LARGE')
    expect(await closed).toBeLessThan(big.length / 10)
  })
})
