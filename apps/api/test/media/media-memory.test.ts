import { createHash } from 'node:crypto'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { type FakeWhatsApp, startFakeWhatsApp } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { activeKey, buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'
import { pdf } from './samples.ts'

// A 100 MiB document through the API over HTTP, generated as it is sent: the API must stream it
// on (to the Cloud API, or to MEDIA_DIR with the sandbox), never hold it. The client, the API and
// the fake platform share this process, so what is measured bounds all three together.
const MiB = 1024 * 1024
const DOCUMENT_LIMIT = 100 * MiB
/** Well below the file: a copy of it anywhere would show as 100 MiB or more. */
const BOUND = 40 * MiB

let world: TestWorld
let fake: FakeWhatsApp
let key: string
let mediaDir: string
beforeAll(async () => {
  world = await createWorld()
  // The fake hashes what it takes and keeps none of it: it stays out of the measure.
  fake = await startFakeWhatsApp({ keepUploadBytes: 0 })
  mediaDir = await mkdtemp(join(tmpdir(), 'dispatch-media-memory-'))
})
afterAll(async () => {
  await fake?.close()
  await world?.close()
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true })
})

/** A multipart form with one PDF of `size` bytes, produced 1 MiB at a time; and its SHA-256. */
function streamedForm(size: number) {
  const boundary = `memory-test-${Date.now()}`
  const head = pdf(64)
  const chunk = Buffer.alloc(MiB, 0x20)
  const hash = createHash('sha256').update(head)
  let sent = head.length
  let stage: 'start' | 'file' | 'end' | 'done' = 'start'
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 'start') {
        controller.enqueue(
          Buffer.concat([
            Buffer.from(
              `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.pdf"\r\n` +
                'content-type: application/pdf\r\n\r\n',
            ),
            head,
          ]),
        )
        stage = 'file'
      } else if (stage === 'file') {
        const piece = chunk.subarray(0, Math.min(chunk.length, size - sent))
        sent += piece.length
        hash.update(piece)
        controller.enqueue(piece)
        if (sent >= size) stage = 'end'
      } else if (stage === 'end') {
        controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`))
        stage = 'done'
      } else controller.close()
    },
  })
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, sha256: () => hash.digest('hex') }
}

// A full collection before each sample: what is measured is what is held, not garbage not yet
// collected (a streamed file leaves 100 MiB of chunks behind it, each unreferenced once passed on).
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void

/**
 * The highest growth of each memory figure over its value at the start, sampled (after a full
 * collection) every few milliseconds while `work` runs.
 */
async function peakGrowth<T>(work: () => Promise<T>) {
  gc()
  const start = process.memoryUsage()
  const peak = { rss: 0, heapUsed: 0, arrayBuffers: 0, external: 0 }
  const sample = () => {
    // A young-generation collection frees the chunks already passed on, and is quick enough to run
    // every few milliseconds; a chunk that survived into the old generation would be counted.
    gc({ type: 'minor' })
    const now = process.memoryUsage()
    for (const name of Object.keys(peak) as Array<keyof typeof peak>) {
      peak[name] = Math.max(peak[name], now[name] - start[name])
    }
  }
  const timer = setInterval(sample, 20)
  try {
    const result = await work()
    sample()
    return { result, peak }
  } finally {
    clearInterval(timer)
  }
}

async function uploadOverHttp(app: TestApp, size: number) {
  const { port } = app.server.address() as { port: number }
  const form = streamedForm(size)
  const res = await fetch(`http://127.0.0.1:${port}/api/third-party/media`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': form.contentType },
    body: form.body,
    duplex: 'half',
  } as RequestInit)
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, sha256: form.sha256 }
}

describe.each([
  [
    'to the Cloud API',
    () => ({
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-memory',
      WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    }),
  ],
  ['to the sandbox (MEDIA_DIR)', () => ({ MEDIA_DIR: mediaDir })],
])('a 100 MiB document, streamed %s', (where, env) => {
  let app: TestApp
  beforeAll(async () => {
    app = await buildTestApp(world, env())
    await app.listen({ host: '127.0.0.1', port: 0 })
    key = (await activeKey(app, { scopes: ['send:document'] })).key
  })
  afterAll(async () => {
    await app?.close()
  })

  it('is taken whole while memory stays far below its size', { timeout: 120_000 }, async () => {
    const { result, peak } = await peakGrowth(() => uploadOverHttp(app, DOCUMENT_LIMIT))
    expect(result.status, JSON.stringify(result.body)).toBe(201)
    expect(result.body).toMatchObject({ kind: 'document', mimeType: 'application/pdf', size: DOCUMENT_LIMIT })
    expect(result.body.sha256).toBe(result.sha256())
    if (where === 'to the Cloud API') {
      const seen = fake.uploads.at(-1)
      expect(seen?.fields).toEqual({ messaging_product: 'whatsapp', type: 'application/pdf' })
      expect(seen?.file).toMatchObject({
        size: DOCUMENT_LIMIT,
        sha256: result.body.sha256,
        type: 'application/pdf',
      })
    } else {
      expect((await stat(join(mediaDir, String(result.body.mediaId)))).size).toBe(DOCUMENT_LIMIT)
    }
    // Measured at about 17 MiB of array buffers to the Cloud API, 6 MiB to the sandbox.
    const peaks = `${where}: ${JSON.stringify(peak)}`
    expect(peak.arrayBuffers, peaks).toBeLessThan(BOUND)
    expect(peak.heapUsed, peaks).toBeLessThan(BOUND)
    expect(peak.rss, peaks).toBeLessThan(BOUND * 2)
  })

  it('one byte more is 413, cut off as it streams, nothing left behind', { timeout: 120_000 }, async () => {
    const uploads = fake.uploads.length
    const { result, peak } = await peakGrowth(() => uploadOverHttp(app, DOCUMENT_LIMIT + 1))
    expect(result.status, JSON.stringify(result.body)).toBe(413)
    expect(result.body.errorCode).toBe('PAYLOAD_TOO_LARGE')
    expect(peak.arrayBuffers).toBeLessThan(BOUND)
    if (where === 'to the Cloud API') {
      // The platform saw the upload begin, and never complete: no id was answered for it.
      expect(fake.uploads.slice(uploads).every((u) => u.mediaId === undefined)).toBe(true)
    } else {
      expect((await readdir(mediaDir)).filter((f) => f.endsWith('.part'))).toEqual([])
    }
  })
})
