import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { MediaMimeType } from '@dispatch/contracts'
import type {} from '@fastify/multipart'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import { IMAGE_HEADER_BYTES, imageTypeOf } from './image-type.ts'

/** An uploaded image, read whole and checked: what the sandbox stores and the Cloud API is sent. */
export interface ReceivedImage {
  bytes: Buffer
  mimeType: MediaMimeType
  size: number
  sha256: string
}

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

/**
 * Reads the one file of a multipart upload, hashing it as it arrives, and refuses the form at the
 * first thing wrong: another field, a second file, a file past `maxBytes`, bytes that are not a
 * JPEG or PNG. Nothing is stored until the whole file is read and checked.
 */
export async function readUploadedImage(request: FastifyRequest, maxBytes: number): Promise<ReceivedImage> {
  if (!request.isMultipart()) {
    throw new AppError('VALIDATION_ERROR', 'The body must be multipart/form-data with one file in "file"')
  }
  let image: ReceivedImage | undefined
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
      if (part.fieldname !== FILE_FIELD || image) {
        part.file.destroy()
        throw new AppError(
          'VALIDATION_ERROR',
          image
            ? 'The form holds more than one file; upload one at a time'
            : `The file must be in the field "${FILE_FIELD}", not ${fieldName(part.fieldname)}`,
        )
      }
      image = await readImage(part.file, maxBytes)
    }
  } catch (caught) {
    let error = caught
    if (!(error instanceof AppError)) {
      request.log.debug({ err: error }, 'multipart upload unreadable')
      error = new AppError('VALIDATION_ERROR', 'The multipart body is malformed or was cut short')
    }
    // The rest of the body is left unread: this answer closes the connection rather than read it.
    if (!request.raw.complete) Object.assign((error as AppError).headers, { connection: 'close' })
    throw error
  }
  if (!image) throw new AppError('VALIDATION_ERROR', `body.${FILE_FIELD} is required: one JPEG or PNG file`)
  return image
}

const notAnImage = (): never => {
  throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The file must be a JPEG or PNG image, as its bytes tell')
}

async function readImage(file: Readable, maxBytes: number): Promise<ReceivedImage> {
  const hash = createHash('sha256')
  const chunks: Buffer[] = []
  let size = 0
  let mimeType: MediaMimeType | undefined
  for await (const chunk of file as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${maxBytes} bytes`)
    }
    chunks.push(chunk)
    hash.update(chunk)
    // Decided as soon as the first bytes are in, so a large file of the wrong type is not read on.
    if (!mimeType && size >= IMAGE_HEADER_BYTES) mimeType = imageTypeOf(Buffer.concat(chunks)) ?? notAnImage()
  }
  if (size === 0) throw new AppError('VALIDATION_ERROR', `body.${FILE_FIELD} is empty`)
  mimeType ??= imageTypeOf(Buffer.concat(chunks)) ?? notAnImage()
  return { bytes: Buffer.concat(chunks, size), mimeType, size, sha256: hash.digest('hex') }
}
