import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { MediaMimeType } from '@dispatch/contracts'
import type { FastifyBaseLogger } from 'fastify'
import { AppError } from '../errors.ts'
import { graphErrorOf, parseJson } from '../platform/graph-answer.ts'
import type { MediaType } from './media-type.ts'

export interface CloudApiMediaOptions {
  apiUrl: string
  accessToken: string
  phoneNumberId: string
  timeoutMs: number
}

/** Uploads a file, streamed as it arrives, to the platform and answers with the platform's media id. */
export type MediaUpload = (
  type: MediaType,
  bytes: AsyncIterable<Buffer>,
  log: FastifyBaseLogger,
) => Promise<string>

/** An id a send can take back as its `mediaId` (the Cloud API's are digits). */
const MEDIA_ID = /^[A-Za-z0-9._:-]{1,256}$/
/** Graph error codes that pass: throttling (app, account, number) and temporary errors. */
const TRANSIENT_CODES = new Set([1, 2, 4, 80007, 130429])
const FILE_NAMES: Record<MediaMimeType, string> = {
  'image/jpeg': 'upload.jpg',
  'image/png': 'upload.png',
  'image/webp': 'upload.webp',
  'video/mp4': 'upload.mp4',
  'video/3gpp': 'upload.3gp',
  'audio/aac': 'upload.aac',
  'audio/amr': 'upload.amr',
  'audio/mpeg': 'upload.mp3',
  'audio/mp4': 'upload.m4a',
  'audio/ogg': 'upload.ogg',
  'application/pdf': 'upload.pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'upload.docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'upload.xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'upload.pptx',
  'application/msword': 'upload.doc',
  'application/vnd.ms-excel': 'upload.xls',
  'application/vnd.ms-powerpoint': 'upload.ppt',
  'text/plain': 'upload.txt',
}

/** 503: the platform cannot take the upload now; its own Retry-After (seconds) when it gave one. */
function platformUnavailable(retryAfter: string | null) {
  const seconds = retryAfter && /^\d{1,4}$/.test(retryAfter) ? retryAfter : '1'
  return new AppError(
    'SERVICE_UNAVAILABLE',
    'The messaging platform cannot take uploads right now; retry shortly',
    {
      'retry-after': seconds,
    },
  )
}

const isTransient = (status: number, code: number | undefined) =>
  status === 429 || status >= 500 || (code !== undefined && TRANSIENT_CODES.has(code))

/**
 * An abort that fires after `timeoutMs` without progress: restarted by each chunk that goes out,
 * and once more when the body is done, for the answer. A 100 MB file may take longer than the
 * timeout to pass; a platform that stops reading, or does not answer, may not.
 */
function idleTimeout(timeoutMs: number) {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const restart = () => {
    clearTimeout(timer)
    timer = setTimeout(() => controller.abort(new Error(`no progress in ${timeoutMs} ms`)), timeoutMs)
  }
  restart()
  return { signal: controller.signal, restart, clear: () => clearTimeout(timer) }
}

/** The AppError a failed fetch carries (the upload's own body failing, such as 413), if any. */
function appErrorIn(error: unknown): AppError | undefined {
  for (let cause = error, depth = 0; cause && depth < 4; depth++) {
    if (cause instanceof AppError) return cause
    cause = (cause as { cause?: unknown }).cause
  }
  return undefined
}

/** What `postStreaming` answers: the status, the headers, and the body as text. */
interface StreamedAnswer {
  status: number
  ok: boolean
  headers: { get(name: string): string | null }
  text: string
}

/**
 * POSTs a body streamed from `body`, with backpressure, by node:http(s) rather than fetch: fetch
 * (undici) keeps every chunk of a streamed request body until the request ends
 * (nodejs/undici#4058), which for a 100 MB upload is 100 MB held.
 */
function postStreaming(
  url: string,
  headers: Record<string, string>,
  body: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, {
      method: 'POST',
      headers,
      signal,
    })
    let sent = false
    request.on('error', reject)
    request.on('response', (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', reject)
      response.on('end', () => {
        // An answer before the whole body (a refusal at the first bytes): the rest is not sent.
        if (!sent) request.destroy()
        const status = response.statusCode ?? 0
        resolve({
          status,
          ok: status >= 200 && status < 300,
          headers: {
            get: (name) => {
              const value = response.headers[name.toLowerCase()]
              return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
            },
          },
          text: Buffer.concat(chunks).toString('utf8'),
        })
      })
    })
    pipeline(Readable.from(body), request).then(
      () => {
        sent = true
      },
      (error: unknown) => {
        request.destroy()
        reject(error)
      },
    )
  })
}

const quoted = (value: string) => value.replace(/[\r\n"]/g, '')

/**
 * The multipart body of an upload, streamed: the text fields first (as the Cloud API reads `type`
 * before the file), then the file's bytes as they come, then the closing boundary.
 */
async function* multipartBody(
  boundary: string,
  mimeType: MediaMimeType,
  bytes: AsyncIterable<Buffer>,
  onChunk: () => void,
): AsyncGenerator<Uint8Array> {
  const field = (name: string, value: string) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  yield Buffer.from(
    field('messaging_product', 'whatsapp') +
      field('type', mimeType) +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${quoted(FILE_NAMES[mimeType])}"\r\n` +
      `content-type: ${mimeType}\r\n\r\n`,
  )
  for await (const chunk of bytes) {
    onChunk()
    yield chunk
  }
  yield Buffer.from(`\r\n--${boundary}--\r\n`)
}

/**
 * The Cloud API's `POST /{phone-number-id}/media`: multipart `file`, `type` (the MIME type) and
 * `messaging_product=whatsapp`, bearer token, answering `{ "id" }`. The file is streamed through
 * as it arrives, never held whole. Its failures become our error body: 503 when trying again may
 * work, 502 when it refused the upload; the token is in no message.
 */
export function createCloudApiMediaUpload(options: CloudApiMediaOptions): MediaUpload {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/${options.phoneNumberId}/media`
  return async (type, bytes, log) => {
    const boundary = `dispatch-${randomBytes(16).toString('hex')}`
    const timeout = idleTimeout(options.timeoutMs)
    let response: StreamedAnswer
    try {
      response = await postStreaming(
        url,
        {
          authorization: `Bearer ${options.accessToken}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
        multipartBody(boundary, type.mimeType, bytes, timeout.restart),
        timeout.signal,
      )
    } catch (error) {
      const own = appErrorIn(error)
      if (own) throw own
      log.warn({ err: error }, 'media upload: the platform did not answer')
      throw platformUnavailable(null)
    } finally {
      timeout.clear()
    }
    const text = response.text
    const answer = parseJson(text)
    if (!response.ok) {
      const { code, message } = graphErrorOf(answer)
      log.warn(
        { platformStatus: response.status, platformCode: code, platformMessage: message },
        'media upload: the platform refused it',
      )
      if (isTransient(response.status, code)) throw platformUnavailable(response.headers.get('retry-after'))
      throw new AppError(
        'PLATFORM_ERROR',
        `The messaging platform refused the upload (HTTP ${response.status}${code === undefined ? '' : `, error ${code}`})`,
      )
    }
    if (typeof answer.id !== 'string' || !MEDIA_ID.test(answer.id)) {
      log.warn({ platformStatus: response.status }, 'media upload: the platform answered without a usable id')
      throw new AppError(
        'PLATFORM_ERROR',
        'The messaging platform answered the upload without a usable media id',
      )
    }
    return answer.id
  }
}

/** An inbound message's media as the platform streams it. */
export interface PlatformMedia {
  mimeType: string
  /** Bytes, when the platform said. */
  size: number | undefined
  body: ReadableStream<Uint8Array>
}

const mediaGone = () =>
  new AppError(
    'NOT_FOUND',
    "The messaging platform no longer has this media (it keeps an inbound message's media 7 days)",
  )

/** A failed answer of the platform's, as our error: gone (404), try again (503), or refused (502). */
async function downloadRefused(response: Response, step: string, log: FastifyBaseLogger): Promise<never> {
  const { code, message } = graphErrorOf(parseJson(await response.text().catch(() => '')))
  log.warn(
    { platformStatus: response.status, platformCode: code, platformMessage: message },
    `media download: the platform refused the ${step}`,
  )
  if (response.status === 404 || response.status === 410 || (response.status === 400 && code === 100)) {
    throw mediaGone()
  }
  if (isTransient(response.status, code)) throw platformUnavailable(response.headers.get('retry-after'))
  throw new AppError(
    'PLATFORM_ERROR',
    `The messaging platform refused the media ${step} (HTTP ${response.status}${code === undefined ? '' : `, error ${code}`})`,
  )
}

/** Meta's media host: the `url` of `GET /{media-id}` is `https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=…`. */
export const META_MEDIA_HOSTS = ['lookaside.fbsbx.com']
/** This machine, a media host outside production only (the fake Cloud API of development and tests). */
const LOCAL_MEDIA_HOSTS = ['localhost', '127.0.0.1', '::1']

const bare = (host: string) =>
  host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')

/** The hosts an inbound media's url may name: `WHATSAPP_MEDIA_HOSTS`, else the defaults. */
export function mediaHostsOf(config: { WHATSAPP_MEDIA_HOSTS?: string | undefined; APP_ENV: string }) {
  const hosts = config.WHATSAPP_MEDIA_HOSTS
    ? config.WHATSAPP_MEDIA_HOSTS.split(',')
    : [...META_MEDIA_HOSTS, ...(config.APP_ENV === 'production' ? [] : LOCAL_MEDIA_HOSTS)]
  return new Set(hosts.map(bare))
}

/**
 * The media types an inbound media is served as: those WhatsApp carries (Meta's description may
 * add parameters, `audio/ogg; codecs=opus`). Anything else is served as bytes.
 */
const SERVABLE_TYPE =
  /^(?:image\/(?:jpeg|png|webp)|video\/(?:mp4|3gpp)|audio\/(?:aac|amr|mpeg|mp4|ogg|opus)|text\/plain|application\/(?:pdf|msword|vnd\.ms-excel|vnd\.ms-powerpoint|vnd\.openxmlformats-officedocument\.(?:wordprocessingml\.document|spreadsheetml\.sheet|presentationml\.presentation)))(?:; ?[a-z0-9-]+=[A-Za-z0-9.-]+)?$/i

const servableType = (described: unknown) =>
  typeof described === 'string' && SERVABLE_TYPE.test(described) ? described : 'application/octet-stream'

/** How many redirects a media download follows, each to a media host only. */
const MAX_MEDIA_REDIRECTS = 3

/**
 * An inbound message's media from the Cloud API: `GET /{media-id}` with the receiving number's
 * token answers `{url, mime_type, file_size, sha256}`, and that short-lived `url`, fetched with the
 * same token, the bytes. The url (and each redirect, followed by hand) must be on one of
 * `mediaHosts`, or nothing is fetched from it: the token goes to the platform's hosts only. The
 * type served is the description's `mime_type` when it is one WhatsApp carries, never the media
 * host's Content-Type. The answer streams: nothing is held here.
 */
export async function downloadCloudApiMedia(
  options: { apiUrl: string; accessToken: string; timeoutMs: number; mediaHosts: ReadonlySet<string> },
  mediaId: string,
  log: FastifyBaseLogger,
): Promise<PlatformMedia> {
  const headers = { authorization: `Bearer ${options.accessToken}` }
  const timeout = idleTimeout(options.timeoutMs)
  try {
    let described: Response
    try {
      described = await fetch(`${options.apiUrl.replace(/\/+$/, '')}/${encodeURIComponent(mediaId)}`, {
        headers,
        signal: timeout.signal,
      })
    } catch (error) {
      log.warn({ err: error }, 'media download: the platform did not answer')
      throw platformUnavailable(null)
    }
    if (!described.ok) return await downloadRefused(described, 'lookup', log)
    const info = parseJson(await described.text())
    let url: URL | undefined
    try {
      url = typeof info.url === 'string' ? new URL(info.url) : undefined
    } catch {
      url = undefined
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      log.warn(
        { platformStatus: described.status },
        'media download: the platform answered without a usable url',
      )
      throw new AppError('PLATFORM_ERROR', 'The messaging platform described the media without a usable url')
    }
    timeout.restart()
    let target: URL = url
    let response: Response
    for (let redirects = 0; ; redirects++) {
      if (!options.mediaHosts.has(bare(target.hostname))) {
        // The host only: the url itself carries the download's own credentials.
        log.warn({ mediaHost: target.hostname }, 'media download: the media url is not on a media host')
        throw new AppError(
          'PLATFORM_ERROR',
          `The messaging platform named a media url on ${target.hostname}, not one of its media hosts (WHATSAPP_MEDIA_HOSTS)`,
        )
      }
      try {
        response = await fetch(target, { headers, signal: timeout.signal, redirect: 'manual' })
      } catch (error) {
        log.warn({ err: error }, 'media download: the media url did not answer')
        throw platformUnavailable(null)
      }
      const location = response.status >= 300 && response.status < 400 && response.headers.get('location')
      if (!location) break
      await response.body?.cancel().catch(() => {})
      const next = URL.canParse(location, target.href) ? new URL(location, target) : undefined
      if (
        redirects >= MAX_MEDIA_REDIRECTS ||
        !next ||
        (next.protocol !== 'https:' && next.protocol !== 'http:')
      ) {
        log.warn({ platformStatus: response.status }, 'media download: a redirect not followed')
        throw new AppError(
          'PLATFORM_ERROR',
          'The messaging platform redirected the media download too often or nowhere',
        )
      }
      target = next
    }
    if (!response.ok || !response.body) return await downloadRefused(response, 'download', log)
    const length = Number(response.headers.get('content-length') ?? info.file_size)
    // From here the body streams: the timer restarts with each chunk, until the last.
    const reader = response.body.getReader()
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await reader.read()
          if (next.done) {
            timeout.clear()
            controller.close()
          } else {
            timeout.restart()
            controller.enqueue(next.value)
          }
        } catch (error) {
          timeout.clear()
          controller.error(error)
        }
      },
      cancel(reason) {
        timeout.clear()
        return reader.cancel(reason)
      },
    })
    return {
      mimeType: servableType(info.mime_type),
      size: Number.isSafeInteger(length) && length >= 0 ? length : undefined,
      body,
    }
  } catch (error) {
    timeout.clear()
    throw error
  }
}
