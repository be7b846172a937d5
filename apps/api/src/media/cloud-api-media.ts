import type { FastifyBaseLogger } from 'fastify'
import { AppError } from '../errors.ts'
import type { ReceivedImage } from './upload-form.ts'

export interface CloudApiMediaOptions {
  apiUrl: string
  accessToken: string
  phoneNumberId: string
  timeoutMs: number
}

/** Uploads an image to the platform and answers with the platform's media id. */
export type MediaUpload = (image: ReceivedImage, log: FastifyBaseLogger) => Promise<string>

/** An id `send-image` can take back as `image.mediaId` (the Cloud API's are digits). */
const MEDIA_ID = /^[A-Za-z0-9._:-]{1,256}$/
/** Graph error codes that pass: throttling (app, account, number) and temporary errors. */
const TRANSIENT_CODES = new Set([1, 2, 4, 80007, 130429])
const FILE_NAMES = { 'image/jpeg': 'upload.jpg', 'image/png': 'upload.png' } as const

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

function parseJson(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text)
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/**
 * The Cloud API's `POST /{phone-number-id}/media`: multipart `file`, `type` (the MIME type) and
 * `messaging_product=whatsapp`, bearer token, answering `{ "id" }`. Its failures become our error
 * body: 503 when trying again may work, 502 when it refused the upload; the token is in no message.
 */
export function createCloudApiMediaUpload(options: CloudApiMediaOptions): MediaUpload {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/${options.phoneNumberId}/media`
  return async (image, log) => {
    const form = new FormData()
    form.append('messaging_product', 'whatsapp')
    form.append('type', image.mimeType)
    form.append(
      'file',
      new Blob([new Uint8Array(image.bytes)], { type: image.mimeType }),
      FILE_NAMES[image.mimeType],
    )
    let response: Response
    let text: string
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.accessToken}` },
        body: form,
        signal: AbortSignal.timeout(options.timeoutMs),
      })
      text = await response.text()
    } catch (error) {
      log.warn({ err: error }, 'media upload: the platform did not answer')
      throw platformUnavailable(null)
    }
    const answer = parseJson(text)
    if (!response.ok) {
      const graph = (answer.error ?? {}) as { code?: unknown; message?: unknown }
      const code = Number.isInteger(graph.code) ? (graph.code as number) : undefined
      log.warn(
        { platformStatus: response.status, platformCode: code, platformMessage: String(graph.message ?? '') },
        'media upload: the platform refused it',
      )
      if (
        response.status === 429 ||
        response.status >= 500 ||
        (code !== undefined && TRANSIENT_CODES.has(code))
      ) {
        throw platformUnavailable(response.headers.get('retry-after'))
      }
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
