import type { Readable } from 'node:stream'
import { CAMPAIGN_AUDIENCE_MEDIA_TYPES } from '@dispatch/contracts'
import type { FastifyInstance } from 'fastify'
import { AppError } from '../../errors.ts'

/**
 * An upload's body, handed through unread: its bytes stay in the socket until the upload reads
 * them. Its stream is a private field, so the text guard's walk over every body sees nothing here
 * (a stream's own properties are the socket and the server).
 */
export class UploadBody {
  readonly #stream: Readable
  readonly format: 'csv' | 'ndjson'
  constructor(stream: Readable, format: 'csv' | 'ndjson') {
    this.#stream = stream
    this.format = format
  }
  get stream(): Readable {
    return this.#stream
  }
}

/**
 * The parsers of an upload's scope: CSV and NDJSON handed through as a stream (never buffered:
 * Fastify's body limit does not apply, the upload counts its own bytes), anything else 415.
 */
export function acceptAudienceBodies(app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  for (const [format, type] of Object.entries(CAMPAIGN_AUDIENCE_MEDIA_TYPES)) {
    app.addContentTypeParser(type, (_request, payload, done) =>
      done(null, new UploadBody(payload as Readable, format as 'csv' | 'ndjson')),
    )
  }
  app.addContentTypeParser('*', (_request, _payload, done) =>
    done(
      new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be text/csv or application/x-ndjson'),
      undefined,
    ),
  )
}
