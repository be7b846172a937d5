import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { filePart, GIF, jpeg, jpegOfSize, png, sha256, upload } from './images.ts'
import {
  aac,
  amr,
  docx,
  isoMedia,
  mp3,
  mp3Frame,
  ole,
  opus,
  pdf,
  pptx,
  text,
  vorbis,
  webp,
  xlsx,
  zip,
} from './samples.ts'

const KiB = 1024
const MiB = 1024 * KiB
const MEDIA_SCOPES = ['send:image', 'send:video', 'send:audio', 'send:document', 'send:sticker']

let world: TestWorld
let app: TestApp
let mediaDir: string
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  mediaDir = await mkdtemp(join(tmpdir(), 'dispatch-media-test-'))
  app = await buildTestApp(world, { MEDIA_DIR: mediaDir })
  key = await activeKey(app, { scopes: MEDIA_SCOPES })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true })
})

const mediaCount = async () => Number((await world.sql`select count(*)::int as n from media`)[0]?.n)
/** Uploads these bytes under a misleading name and declared type: only the bytes may decide. */
const put = (bytes: Buffer, as = key.key) =>
  upload(app, as, [filePart(bytes, 'upload.bin', 'application/x-anything')])

describe('every kind WhatsApp takes, told by its bytes', () => {
  it.each<[string, Buffer, string, string]>([
    ['a JPEG', jpeg(), 'image', 'image/jpeg'],
    ['a PNG', png(), 'image', 'image/png'],
    ['an MP4', isoMedia('isom'), 'video', 'video/mp4'],
    ['an MP4 (mp42)', isoMedia('mp42'), 'video', 'video/mp4'],
    ['a 3GPP video', isoMedia('3gp5'), 'video', 'video/3gpp'],
    ['AAC (ADTS)', aac(), 'audio', 'audio/aac'],
    ['AMR', amr(), 'audio', 'audio/amr'],
    ['MP3 with an ID3 tag', mp3(), 'audio', 'audio/mpeg'],
    ['MP3, a bare frame', mp3Frame(), 'audio', 'audio/mpeg'],
    ['M4A', isoMedia('M4A '), 'audio', 'audio/mp4'],
    ['OGG Opus', opus(), 'audio', 'audio/ogg'],
    ['a PDF', pdf(), 'document', 'application/pdf'],
    ['a docx', docx(), 'document', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    ['an xlsx', xlsx(), 'document', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
    [
      'a pptx',
      pptx(),
      'document',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    ],
    ['a .doc', ole('WordDocument'), 'document', 'application/msword'],
    ['an .xls', ole('Workbook'), 'document', 'application/vnd.ms-excel'],
    ['a .ppt', ole('PowerPoint Document'), 'document', 'application/vnd.ms-powerpoint'],
    ['plain text (UTF-8)', text(), 'document', 'text/plain'],
    ['a static WebP sticker', webp(false), 'sticker', 'image/webp'],
    ['an animated WebP sticker', webp(true), 'sticker', 'image/webp'],
  ])('%s: 201, told by its bytes with its kind and type', async (_, bytes, kind, mimeType) => {
    const res = await put(bytes)
    expect(res.statusCode, res.body).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      mediaId: expect.any(String),
      kind,
      mimeType,
      size: bytes.length,
      sha256: sha256(bytes),
    })
    const [row] = await world.sql`select * from media where id = ${body.mediaId}`
    expect(row).toMatchObject({ api_key_id: key.id, mime_type: mimeType, size: bytes.length })
    // The sandbox keeps images and stickers in their row, the larger kinds in MEDIA_DIR.
    if (kind === 'image' || kind === 'sticker') expect(Buffer.from(row?.data).equals(bytes)).toBe(true)
    else {
      expect(row?.data).toBeNull()
      expect((await readFile(join(mediaDir, body.mediaId))).equals(bytes)).toBe(true)
    }
  })

  it.each<[string, Buffer]>([
    ['a GIF', GIF],
    ['QuickTime', isoMedia('qt  ')],
    ['3GPP2', isoMedia('3g2a')],
    ['OGG Vorbis (WhatsApp takes Opus only)', vorbis()],
    ['a ZIP that is no Office file', zip(['notes.txt', 'photo.jpg'])],
    ['an OLE file that is no Office file', ole('Contents')],
    ['text with a NUL', Buffer.from('hello\0world, not really text\n')],
    ['Latin-1 text (not UTF-8)', Buffer.from('Ol\xe1, pedido n\xba 1042\n', 'latin1')],
    ['random bytes', Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7919 + 13) % 256))],
  ])('%s: 415 UNSUPPORTED_MEDIA_TYPE, nothing stored', async (_, bytes) => {
    const before = await mediaCount()
    expectError(await put(bytes), 415, 'UNSUPPORTED_MEDIA_TYPE', /no type WhatsApp takes/)
    expect(await mediaCount()).toBe(before)
  })
})

describe("each kind's own limit", () => {
  it.each<[string, (size: number) => Buffer, number]>([
    ['an image', jpegOfSize, 5 * MiB],
    ['a video', (size) => isoMedia('isom', size), 16 * MiB],
    ['an audio', (size) => isoMedia('M4A ', size), 16 * MiB],
    ['a static sticker', (size) => webp(false, size), 100 * KiB],
    ['an animated sticker', (size) => webp(true, size), 500 * KiB],
  ])('%s: exactly its limit (%i bytes) is taken, one byte more is 413', async (_, make, limit) => {
    const exact = await put(make(limit))
    expect(exact.statusCode, exact.body).toBe(201)
    expect(exact.json().size).toBe(limit)
    const before = await mediaCount()
    expectError(
      await put(make(limit + 1)),
      413,
      'PAYLOAD_TOO_LARGE',
      new RegExp(`larger than ${limit} bytes`),
    )
    expect(await mediaCount()).toBe(before)
  })

  it('an animated sticker may be five times a static one', async () => {
    const res = await put(webp(true, 300 * KiB))
    expect(res.statusCode, res.body).toBe(201)
    expectError(await put(webp(false, 300 * KiB)), 413, 'PAYLOAD_TOO_LARGE', /a sticker may be/)
  })

  it('a document past MEDIA_MAX_BYTES is refused and its partial file removed (100 MiB: media-memory.test.ts)', async () => {
    // MEDIA_MAX_BYTES caps every kind: a small app shows a document cut off, nothing left behind.
    const small = await buildTestApp(world, { MEDIA_MAX_BYTES: String(64 * KiB), MEDIA_DIR: mediaDir })
    try {
      expectError(await upload(small, key.key, [filePart(pdf(64 * KiB + 1))]), 413, 'PAYLOAD_TOO_LARGE')
      expect((await readdir(mediaDir)).filter((f) => f.endsWith('.part'))).toEqual([])
    } finally {
      await small.close()
    }
  })
})

describe('scopes: any media scope to upload, the kind’s own for what the bytes are', () => {
  it.each<[string, Buffer, string]>([
    ['an image', png(), 'send:image'],
    ['a video', isoMedia('isom'), 'send:video'],
    ['an audio', opus(), 'send:audio'],
    ['a document', pdf(), 'send:document'],
    ['a sticker', webp(false), 'send:sticker'],
  ])('%s needs %s: a key with every other media scope gets 403', async (_, bytes, scope) => {
    const lacking = await activeKey(app, { scopes: MEDIA_SCOPES.filter((s) => s !== scope) })
    const before = await mediaCount()
    expectError(
      await put(bytes, lacking.key),
      403,
      'INSUFFICIENT_SCOPE',
      new RegExp(`lacks the "${scope}" scope`),
    )
    expect(await mediaCount()).toBe(before)
    const only = await activeKey(app, { scopes: [scope] })
    expect((await put(bytes, only.key)).statusCode).toBe(201)
  })

  it('a key with no media scope is refused before its body is read', async () => {
    const textOnly = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    expectError(await put(png(), textOnly.key), 403, 'INSUFFICIENT_SCOPE', /lacks every media scope/)
  })

  it('a document that is a JPEG by its bytes is an image, and needs send:image', async () => {
    const documentsOnly = await activeKey(app, { scopes: ['send:document'] })
    expectError(await put(jpeg(), documentsOnly.key), 403, 'INSUFFICIENT_SCOPE', /an image \(image\/jpeg\)/)
  })
})
