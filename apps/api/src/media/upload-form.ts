import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import type {} from '@fastify/multipart'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import { MAX_SNIFF_BYTES, type MediaType, sniffMediaType } from './media-type.ts'

/** An uploaded file as it was streamed through: its type, told by its bytes, and what it held. */
export interface ReceivedMedia extends MediaType {
  size: number
  sha256: string
}

/** Where a file's bytes go once its type is known: the platform, a directory, a row. */
export type MediaStore<T> = (type: MediaType, bytes: AsyncIterable<Buffer>) => Promise<T>

/** The form field the file comes in, as the Cloud API's own upload names it. */
export const FILE_FIELD = 'file'

/**
 * busboy's limits for an upload form. A file stops one byte past the limit, which tells "too
 * large" from "exactly the limit"; a second file or any text field is seen only to be refused.
 */
export const uploadLimits = (maxBytes: number) => ({
  fileSize: maxBytes + 1,
  files: 2,
  fields: 1,
  parts: 3,
  fieldNameSize: 100,
  fieldSize: 1024,
  headerPairs: 20,
})

const fieldName = (name: string) => JSON.stringify(name.slice(0, 100))

export interface ReceiveOptions<T> {
  /** The form's own limit (MEDIA_MAX_BYTES): no kind takes more, whatever its own limit. */
  maxBytes: number
  /** Throws when the caller may not upload this type (the scope of its kind). */
  allow: (type: MediaType) => void
  store: MediaStore<T>
  /** Undoes a store whose form turned out wrong after the file (a second file, another field). */
  discard?: (stored: T) => Promise<void>
}

/**
 * Reads the one file of a multipart upload as it streams in: its type is told from its first
 * bytes (at most `MAX_SNIFF_BYTES` are held), then the whole file flows to `store`, counted and
 * hashed on the way, and cut off with 413 at the first byte past its kind's limit. Refuses the
 * form at the first thing wrong: another field, a second file, bytes of no type WhatsApp takes.
 */
export async function receiveUpload<T>(
  request: FastifyRequest,
  options: ReceiveOptions<T>,
): Promise<{ media: ReceivedMedia; stored: T }> {
  if (!request.isMultipart()) {
    throw new AppError('VALIDATION_ERROR', 'The body must be multipart/form-data with one file in "file"')
  }
  let received: { media: ReceivedMedia; stored: T } | undefined
  try {
    for await (const part of request.parts()) {
      if (part.type !== 'file') {
        throw new AppError(
          'VALIDATION_ERROR',
          part.fieldname === FILE_FIELD
            ? `body.${FILE_FIELD} must be a file, not a text field`
            : `body has unknown field ${fieldName(part.fieldname)}: an upload takes one file, in "${FILE_FIELD}"`,
        )
      }
      if (part.fieldname !== FILE_FIELD || received) {
        part.file.destroy()
        throw new AppError(
          'VALIDATION_ERROR',
          received
            ? 'The form holds more than one file; upload one at a time'
            : `The file must be in the field "${FILE_FIELD}", not ${fieldName(part.fieldname)}`,
        )
      }
      received = await streamFile(part.file, options)
    }
  } catch (caught) {
    let error = caught
    if (!(error instanceof AppError)) {
      request.log.debug({ err: error }, 'multipart upload unreadable')
      error = new AppError('VALIDATION_ERROR', 'The multipart body is malformed or was cut short')
    }
    if (received && options.discard) {
      await options.discard(received.stored).catch((err: unknown) => {
        request.log.warn({ err }, 'media upload: a refused upload was not cleaned up')
      })
    }
    // The rest of the body is left unread: this answer closes the connection rather than read it.
    if (!request.raw.complete) Object.assign((error as AppError).headers, { connection: 'close' })
    throw error
  }
  if (!received) {
    throw new AppError(
      'VALIDATION_ERROR',
      `body.${FILE_FIELD} is required: one image, video, audio, document or sticker file`,
    )
  }
  return received
}

export const unsupportedMedia = () =>
  new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    "The file's bytes are of no type WhatsApp takes: JPEG or PNG images, MP4 or 3GPP video, " +
      'AAC, AMR, MP3, M4A or OGG (Opus) audio, PDF, Word, Excel, PowerPoint or plain-text documents, ' +
      'WebP stickers',
  )

const tooLarge = (type: MediaType, limit: number) =>
  new AppError(
    'PAYLOAD_TOO_LARGE',
    `The file is larger than ${limit} bytes, the most a${type.animated ? 'n animated' : ''} ${type.kind} may be` +
      (type.kind === 'sticker' ? '' : ` (${type.mimeType})`),
  )

async function streamFile<T>(file: Readable, options: ReceiveOptions<T>) {
  const chunks = (file as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  const held: Buffer[] = []
  let heldBytes = 0
  let ended = false
  let sniffed: ReturnType<typeof sniffMediaType> = 'more'
  try {
    // Decided as soon as the first bytes tell, so a large file of the wrong type is not read on.
    while (sniffed === 'more') {
      const next = await chunks.next()
      if (next.done) ended = true
      else {
        held.push(next.value)
        heldBytes += next.value.length
      }
      if (ended && heldBytes === 0) throw new AppError('VALIDATION_ERROR', `body.${FILE_FIELD} is empty`)
      sniffed = sniffMediaType(Buffer.concat(held, heldBytes).subarray(0, MAX_SNIFF_BYTES + 1), ended)
    }
    if (!sniffed) throw unsupportedMedia()
    const type = sniffed
    options.allow(type)
    const limit = Math.min(type.maxBytes, options.maxBytes)
    const hash = createHash('sha256')
    let size = 0
    let failure: AppError | undefined
    let done = false
    async function* bytes(): AsyncGenerator<Buffer> {
      const pass = (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) {
          failure = tooLarge(type, limit)
          throw failure
        }
        hash.update(chunk)
        return chunk
      }
      for (const chunk of held.splice(0)) yield pass(chunk)
      if (!ended) {
        for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield pass(next.value)
      }
      done = true
    }
    let stored: T
    try {
      stored = await options.store(type, bytes())
    } catch (error) {
      // A store sees the limit's error wrapped (a fetch's body failing): the limit's own is the answer.
      throw failure ?? error
    }
    if (!done) throw new Error('media store returned before reading the whole file')
    return { media: { ...type, size, sha256: hash.digest('hex') }, stored }
  } finally {
    if (!ended) await chunks.return?.()
  }
}
