import { createHash, randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { graphError, type ScriptedAnswer } from './graph-error.ts'

/** One file upload the fake platform received (`POST /{phone-number-id}/media`). */
export interface CloudApiUpload {
  path: string
  headers: IncomingHttpHeaders
  /** The form's text fields (`type`, `messaging_product`), by name. */
  fields: Record<string, string>
  /**
   * The form's `file` part, when it had one: `size` and `sha256` of all of it, and its `bytes` up
   * to the fake's `keepUploadBytes` (all of them, unless the file is larger).
   */
  file: { name: string; type: string; bytes: Buffer; size: number; sha256: string } | undefined
  /** The media id the fake answered with, when it took the upload. */
  mediaId: string | undefined
  receivedAt: number
}

/** A `GET /{media-id}` or media download the fake answered. */
export interface CloudApiMediaRead {
  path: string
  authorization: string | undefined
  mediaId: string
  step: 'lookup' | 'download'
  status: number
}

interface StoredMedia {
  bytes: Buffer
  mimeType: string
  /** The only token that may read it; any bearer token when unset. */
  token: string | undefined
}

/** `POST /v21.0/{phone-number-id}/media`, the Graph API's upload path. */
/** `POST /_fake/media`: the fake's control route giving it a customer's file (body: the bytes). */
const MEDIA_CONTROL = '/_fake/media'
const MEDIA_PATH = /^(?:\/v[0-9.]+)?\/[0-9]+\/media(?:\?.*)?$/
/** `GET /v21.0/{media-id}`: a media's description. */
const MEDIA_LOOKUP = /^(?:\/v[0-9.]+)?\/([0-9]+)(?:\?.*)?$/
/** Where the fake serves a media's bytes (Meta's are short-lived lookaside URLs). */
const MEDIA_DOWNLOAD = /^\/_fake\/media\/([0-9]+)\/download(?:\?.*)?$/

/** A Graph media id: a long decimal number. */
const newMediaId = () => String(BigInt(`0x${randomBytes(7).toString('hex')}`) + 1_000_000_000_000_000n)

/**
 * The fake Cloud API's media: uploads taken as a stream (`POST /{phone-number-id}/media`, its
 * multipart form parsed as it arrives, so a 100 MB file is hashed, not held), and media to
 * download: `GET /{media-id}` answers `{url, mime_type, sha256, file_size, id}` for ids given by
 * `add` or by an upload, and that url the bytes, both with a bearer token.
 */
export class FakeMedia {
  readonly uploads: CloudApiUpload[] = []
  readonly reads: CloudApiMediaRead[] = []
  readonly #uploadQueue: ScriptedAnswer[] = []
  readonly #media = new Map<string, StoredMedia>()
  /** How many bytes of each upload are kept in `uploads[].file.bytes`. */
  keepUploadBytes: number
  /** The Content-Type downloads answer with, when set (else the media's own). */
  downloadContentType: string | undefined
  /** When set, a download answers `302` to this URL instead of the bytes (unless its query has `redirected=1`). */
  redirectDownloadsTo: string | undefined

  constructor(options: { keepUploadBytes?: number | undefined } = {}) {
    this.keepUploadBytes = options.keepUploadBytes ?? 32 * 1024 * 1024
    this.downloadContentType = undefined
    this.redirectDownloadsTo = undefined
  }

  /** The next answers to media uploads, in order; after them the fake takes every upload again. */
  scriptUploads(...answers: ScriptedAnswer[]) {
    this.#uploadQueue.push(...answers)
  }

  /** Media the platform holds (as an inbound message's), readable by `token` (any when unset): its id. */
  add(bytes: Buffer, mimeType: string, options: { token?: string; id?: string } = {}): string {
    const id = options.id ?? newMediaId()
    this.#media.set(id, { bytes, mimeType, token: options.token })
    return id
  }

  /** Forgets a media, as Meta does after 7 days (inbound) or 30 (uploads). */
  expire(id: string) {
    this.#media.delete(id)
  }

  /** Answers the request when it is one of media's; false leaves it to the rest of the fake. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? ''
    if (req.method === 'POST' && url === MEDIA_CONTROL) {
      void this.#control(req, res)
      return true
    }
    if (req.method === 'POST' && MEDIA_PATH.test(url)) {
      void this.#upload(req, res)
      return true
    }
    const lookup = req.method === 'GET' ? MEDIA_LOOKUP.exec(url) : null
    const download = req.method === 'GET' ? MEDIA_DOWNLOAD.exec(url) : null
    const id = lookup?.[1] ?? download?.[1]
    if (!id) return false
    req.resume()
    const media = this.#media.get(id)
    const authorization = req.headers.authorization
    const answer = (status: number) =>
      this.reads.push({ path: url, authorization, mediaId: id, step: lookup ? 'lookup' : 'download', status })
    if (
      !authorization?.startsWith('Bearer ') ||
      (media?.token && authorization !== `Bearer ${media.token}`)
    ) {
      answer(401)
      void write(res, graphError(190, 'Error validating access token: Session has expired', 401))
    } else if (!media) {
      answer(lookup ? 400 : 404)
      void write(
        res,
        lookup
          ? graphError(100, `Unsupported get request. Object with ID '${id}' does not exist`)
          : { status: 404, body: { error: 'not found' } },
      )
    } else if (lookup) {
      answer(200)
      void write(res, {
        status: 200,
        body: {
          messaging_product: 'whatsapp',
          url: `http://${req.headers.host}/_fake/media/${id}/download?ext=${Date.now()}`,
          mime_type: media.mimeType,
          sha256: createHash('sha256').update(media.bytes).digest('hex'),
          file_size: media.bytes.length,
          id,
        },
      })
    } else if (this.redirectDownloadsTo && !url.includes('redirected=1')) {
      answer(302)
      res.writeHead(302, { location: this.redirectDownloadsTo, 'content-length': '0' })
      res.end()
    } else {
      answer(200)
      res.writeHead(200, {
        'content-type': this.downloadContentType ?? media.mimeType,
        'content-length': String(media.bytes.length),
      })
      res.end(media.bytes)
    }
    return true
  }

  /** The fake's own control route (not Meta's): a customer's file, as `pnpm fake:reply --image` sends it. */
  async #control(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const mimeType = req.headers['content-type'] ?? 'application/octet-stream'
    await write(res, { status: 200, body: { id: this.add(Buffer.concat(chunks), mimeType) } })
  }

  async #upload(req: IncomingMessage, res: ServerResponse) {
    const upload: CloudApiUpload = {
      path: req.url ?? '',
      headers: req.headers,
      fields: {},
      file: undefined,
      mediaId: undefined,
      receivedAt: Date.now(),
    }
    const boundary = /^multipart\/form-data;.*\bboundary=(?:"([^"]+)"|([^;\s]+))/i.exec(
      req.headers['content-type'] ?? '',
    )
    try {
      // Not a multipart form: recorded empty, refused below.
      if (boundary) await readForm(req, (boundary[1] ?? boundary[2]) as string, upload, this.keepUploadBytes)
      else for await (const _ of req);
    } catch {
      upload.fields = {}
      upload.file = undefined
    }
    this.uploads.push(upload)
    await write(res, this.#uploadQueue.shift() ?? this.#accept(upload))
  }

  #accept(upload: CloudApiUpload): ScriptedAnswer {
    if (!upload.headers.authorization?.startsWith('Bearer ')) {
      return graphError(190, 'Error validating access token', 401)
    }
    const { file } = upload
    if (upload.fields.messaging_product !== 'whatsapp' || !upload.fields.type || !file) {
      return graphError(100, 'Invalid parameter')
    }
    upload.mediaId = newMediaId()
    // What it kept is downloadable (all of it, unless it was past keepUploadBytes).
    this.#media.set(upload.mediaId, { bytes: file.bytes, mimeType: upload.fields.type, token: undefined })
    return { status: 200, body: { id: upload.mediaId } }
  }
}

export async function write(res: ServerResponse, answer: ScriptedAnswer) {
  if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
  if (!res.writable) return
  res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
  res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
}

interface Part {
  name: string
  filename: string | undefined
  type: string
  kept: Buffer[]
  keptBytes: number
  size: number
  hash: ReturnType<typeof createHash>
}

/**
 * A `multipart/form-data` body parsed as it streams in: text fields into `fields`, the `file`
 * part hashed and counted, its first `keep` bytes kept. Throws on a malformed form.
 */
async function readForm(body: AsyncIterable<Buffer>, boundary: string, upload: CloudApiUpload, keep: number) {
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1')
  // The body's first boundary has no line break before it: one is supplied.
  let buffer: Buffer = Buffer.from('\r\n')
  let state: 'preamble' | 'boundary' | 'headers' | 'body' | 'done' = 'preamble'
  let part: Part | undefined
  const take = (bytes: Buffer) => {
    if (!part || bytes.length === 0) return
    part.size += bytes.length
    part.hash.update(bytes)
    // A text field is kept whole, whatever the limit on files.
    const room = part.filename === undefined ? bytes.length : Math.max(0, keep - part.keptBytes)
    if (room > 0) {
      const kept = Buffer.from(bytes.subarray(0, room))
      part.kept.push(kept)
      part.keptBytes += kept.length
    }
  }
  const finish = () => {
    if (!part) return
    const bytes = Buffer.concat(part.kept, part.keptBytes)
    if (part.filename === undefined) upload.fields[part.name] = bytes.toString('utf8')
    else if (part.name === 'file') {
      upload.file = {
        name: part.filename,
        type: part.type,
        bytes,
        size: part.size,
        sha256: part.hash.digest('hex'),
      }
    }
    part = undefined
  }
  for await (const chunk of body) {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk
    for (;;) {
      if (state === 'preamble' || state === 'body') {
        const at = buffer.indexOf(delimiter)
        if (at < 0) {
          // Keep what could be the start of a delimiter cut by the chunk's end.
          const safe = buffer.length - delimiter.length
          if (safe > 0) {
            if (state === 'body') take(buffer.subarray(0, safe))
            buffer = buffer.subarray(safe)
          }
          break
        }
        if (state === 'body') take(buffer.subarray(0, at))
        finish()
        buffer = buffer.subarray(at + delimiter.length)
        state = 'boundary'
      }
      if (state === 'boundary') {
        if (buffer.length < 2) break
        const next = buffer.toString('latin1', 0, 2)
        if (next === '--') {
          state = 'done'
          break
        }
        if (next !== '\r\n') throw new Error('malformed multipart boundary')
        buffer = buffer.subarray(2)
        state = 'headers'
      }
      if (state === 'headers') {
        const end = buffer.indexOf('\r\n\r\n')
        if (end < 0) break
        const headers = buffer.toString('utf8', 0, end)
        buffer = buffer.subarray(end + 4)
        const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? ''
        const name = /\bname="([^"]*)"/i.exec(disposition)?.[1]
        if (name === undefined) throw new Error('multipart part without a name')
        part = {
          name,
          filename: /\bfilename="([^"]*)"/i.exec(disposition)?.[1],
          type: /^content-type:\s*(.*)$/im.exec(headers)?.[1]?.trim() ?? '',
          kept: [],
          keptBytes: 0,
          size: 0,
          hash: createHash('sha256'),
        }
        state = 'body'
      }
      if (state === 'done') break
    }
    if (state === 'done') buffer = Buffer.alloc(0)
  }
  if (state !== 'done') throw new Error('multipart body cut short')
}
