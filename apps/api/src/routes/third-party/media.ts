import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as NodeReadableStream } from 'node:stream/web'
import { MEDIA_SCOPES, MediaContentParams, MediaUploaded, MediaUploadForm, Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import Type from 'typebox'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import {
  createCloudApiMediaUpload,
  downloadCloudApiMedia,
  mediaHostsOf,
} from '../../media/cloud-api-media.ts'
import type { MediaType } from '../../media/media-type.ts'
import { receiveUpload, uploadLimits } from '../../media/upload-form.ts'
import { createSenderAccess } from '../../platform/sender-access.ts'
import { MULTIPART_BODY } from '../../plugins/openapi.ts'
import { SCOPE_IN_ROUTE } from '../authenticate.ts'

/** Where an upload went: the platform's id, or the sandbox's copy (in the row, or a file). */
interface StoredMedia {
  id: string
  data: Buffer | null
  path?: string
}

const MEDIA_SCOPE_LIST = Object.values(MEDIA_SCOPES)

/** Holds a request whose key has none of the media send scopes, before its body is read. */
const requireAnyMediaScope = async (request: FastifyRequest) => {
  if (!MEDIA_SCOPE_LIST.some((scope) => request.apiKey.scopes.includes(scope))) {
    throw new AppError(
      'INSUFFICIENT_SCOPE',
      `The API key lacks every media scope (${MEDIA_SCOPE_LIST.map((s) => `"${s}"`).join(', ')})`,
    )
  }
}

/**
 * `POST /media`: one image, video, audio, document or sticker, to send later by its id, its type
 * told by its bytes and streamed through (never held whole). With the Cloud API the file goes to
 * the platform and its id is kept; with the sandbox the bytes are kept here, under a new UUID.
 * `GET /media/{id}/content`: an inbound message's media, streamed from the platform.
 */
export const mediaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, db } = app.deps
  const { WHATSAPP_ACCESS_TOKEN: accessToken, WHATSAPP_PHONE_NUMBER_ID: phoneNumberId } = config
  const cloud = config.platform === 'whatsapp-cloud'
  const uploadToPlatform =
    cloud && accessToken && phoneNumberId
      ? createCloudApiMediaUpload({
          apiUrl: config.WHATSAPP_API_URL,
          accessToken,
          phoneNumberId,
          timeoutMs: config.MEDIA_UPLOAD_TIMEOUT_MS,
        })
      : undefined
  const accessOf = createSenderAccess(app.deps)
  const mediaHosts = mediaHostsOf(config)

  /** The sandbox keeps images and stickers in their row, as before; larger kinds in MEDIA_DIR. */
  const keepInSandbox = async (type: MediaType, bytes: AsyncIterable<Buffer>): Promise<StoredMedia> => {
    const id = randomUUID()
    if (type.kind === 'image' || type.kind === 'sticker') {
      const chunks: Buffer[] = []
      for await (const chunk of bytes) chunks.push(chunk)
      return { id, data: Buffer.concat(chunks) }
    }
    await mkdir(config.MEDIA_DIR, { recursive: true })
    const path = join(config.MEDIA_DIR, id)
    const partial = `${path}.part`
    try {
      await pipeline(Readable.from(bytes), createWriteStream(partial, { flags: 'wx' }))
      await rename(partial, path)
    } catch (error) {
      await rm(partial, { force: true })
      throw error
    }
    return { id, data: null, path }
  }
  const forget = async (stored: StoredMedia) => {
    if (stored.path) await rm(stored.path, { force: true })
  }

  // Only this scope parses multipart (every other route stays JSON only), and it parses nothing else.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) =>
    done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be multipart/form-data'), undefined),
  )
  await app.register(multipart, { limits: uploadLimits(config.MEDIA_MAX_BYTES), throwFileSizeLimit: false })

  app.post(
    '/media',
    {
      config: { scope: SCOPE_IN_ROUTE, scopesInRoute: MEDIA_SCOPE_LIST },
      onRequest: requireAnyMediaScope,
      schema: {
        operationId: 'uploadMedia',
        tags: ['media'],
        summary: 'Upload a file to send: image, video, audio, document or sticker',
        description:
          'A multipart form with one file in `file`, its type told by its bytes: JPEG or PNG image ' +
          '(5 MiB), MP4 or 3GPP video (16 MiB), AAC, AMR, MP3, M4A or OGG Opus audio (16 MiB), PDF, ' +
          'Word, Excel, PowerPoint or plain-text document (100 MiB), WebP sticker (100 KiB; 500 KiB ' +
          'animated). Requires a media scope to start, and the scope of the kind the file turns out ' +
          'to be (`send:image`, `send:video`, `send:audio`, `send:document`, `send:sticker`). The ' +
          "answer's `mediaId` is what that kind's send takes.",
        [MULTIPART_BODY]: MediaUploadForm,
        response: {
          201: MediaUploaded,
          ...errorResponses(
            'VALIDATION_ERROR',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'PLATFORM_ERROR',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const { scopes } = request.apiKey
      const { media, stored } = await receiveUpload<StoredMedia>(request, {
        maxBytes: config.MEDIA_MAX_BYTES,
        allow: (type) => {
          const scope = MEDIA_SCOPES[type.kind]
          if (!scopes.includes(scope)) {
            throw new AppError(
              'INSUFFICIENT_SCOPE',
              `The file is ${type.kind === 'image' ? 'an' : 'a'} ${type.kind} (${type.mimeType}); the API key lacks the "${scope}" scope`,
            )
          }
        },
        store: uploadToPlatform
          ? async (type, bytes) => ({ id: await uploadToPlatform(type, bytes, request.log), data: null })
          : keepInSandbox,
        discard: forget,
      })
      const { kind, mimeType, size, sha256 } = media
      let inserted: boolean
      try {
        inserted = await owned(db, callerOf(request)).media.insert({
          id: stored.id,
          mimeType,
          size,
          sha256,
          data: stored.data,
        })
      } catch (error) {
        await forget(stored)
        throw error
      }
      if (!inserted) {
        await forget(stored)
        throw new AppError('PLATFORM_ERROR', 'The messaging platform answered with a media id already in use')
      }
      const mediaId = stored.id
      request.log.info({ mediaId, kind, mimeType, size, platform: config.platform }, 'media uploaded')
      return reply.code(201).send({ mediaId, kind, mimeType, size, sha256 })
    },
  )

  app.get(
    '/media/:mediaId/content',
    {
      config: { scope: Scopes.readMessages },
      schema: {
        operationId: 'getInboundMediaContent',
        tags: ['media'],
        summary: "Download an inbound message's media",
        description:
          'Requires the `read:messages` scope. The media of a reply routed to this key (its ' +
          '`content.media.id`), streamed from the Cloud API with the token of the number that ' +
          "received it, and only from the platform's media hosts (`WHATSAPP_MEDIA_HOSTS`). Served as " +
          'an attachment (`Content-Disposition: attachment`, `Content-Security-Policy: sandbox`, ' +
          "`X-Content-Type-Options: nosniff`), typed as the platform's description of it says when " +
          'that is a type WhatsApp carries, else `application/octet-stream`. Meta keeps inbound media 7 days. ' +
          "Another key's media, an unknown id, and (with the sandbox, which keeps no inbound media) " +
          'any id: 404.',
        params: MediaContentParams,
        response: {
          200: {
            // Sent with the media type the platform gave (`image/jpeg`, `application/pdf`, …).
            description: 'The media bytes, with their own media type',
            content: { '*/*': { schema: Type.String({ format: 'binary' }) } },
          },
          ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND', 'PLATFORM_ERROR', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request, reply) => {
      const { mediaId } = request.params
      const ref = await owned(db, callerOf(request)).media.inbound(mediaId)
      if (!ref)
        throw new AppError('NOT_FOUND', `No inbound media with id ${JSON.stringify(mediaId)} for this key`)
      if (!cloud) {
        throw new AppError(
          'NOT_FOUND',
          'The sandbox platform keeps no inbound media: only the Cloud API can give its bytes',
        )
      }
      const access = await accessOf(ref.phoneNumberId)
      if (!access) {
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'No access token is configured for the business number that received this media',
          { 'retry-after': '60' },
        )
      }
      const media = await downloadCloudApiMedia(
        {
          apiUrl: access.apiUrl,
          accessToken: access.accessToken,
          timeoutMs: config.MEDIA_UPLOAD_TIMEOUT_MS,
          mediaHosts,
        },
        mediaId,
        request.log,
      )
      // A download, never a page of the API's (and the console's) origin: not sniffed (every
      // answer says nosniff), sandboxed should a browser render it anyway.
      reply.header('content-type', media.mimeType)
      reply.header('content-disposition', 'attachment')
      reply.header('content-security-policy', 'sandbox')
      if (media.size !== undefined) reply.header('content-length', String(media.size))
      // A stream, not the schema's string: Fastify sends it as it comes, unserialized.
      return reply.send(Readable.fromWeb(media.body as NodeReadableStream<Uint8Array>) as never)
    },
  )
}
