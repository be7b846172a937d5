import { randomUUID } from 'node:crypto'
import { MediaUploaded, MediaUploadForm, Scopes } from '@dispatch/contracts'
import { insertMedia } from '@dispatch/db'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { createCloudApiMediaUpload } from '../../media/cloud-api-media.ts'
import { readUploadedImage, uploadLimits } from '../../media/upload-form.ts'
import { MULTIPART_BODY } from '../../plugins/openapi.ts'
import { errorResponses } from '../responses.ts'

/**
 * `POST /media`: one JPEG or PNG, to send later with `send-image`. With the Cloud API the file goes
 * to the platform and its id is kept; with the sandbox the bytes are kept here, under a new UUID.
 */
export const mediaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, db } = app.deps
  const { WHATSAPP_ACCESS_TOKEN: accessToken, WHATSAPP_PHONE_NUMBER_ID: phoneNumberId } = config
  const uploadToPlatform =
    config.platform === 'whatsapp-cloud' && accessToken && phoneNumberId
      ? createCloudApiMediaUpload({
          apiUrl: config.WHATSAPP_API_URL,
          accessToken,
          phoneNumberId,
          timeoutMs: config.MEDIA_UPLOAD_TIMEOUT_MS,
        })
      : undefined

  // Only this scope parses multipart (every other route stays JSON only), and it parses nothing else.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) =>
    done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be multipart/form-data'), undefined),
  )
  await app.register(multipart, { limits: uploadLimits(config.MEDIA_MAX_BYTES), throwFileSizeLimit: false })

  app.post(
    '/media',
    {
      onRequest: app.requireApiKey(Scopes.sendImage),
      schema: {
        operationId: 'uploadMedia',
        tags: ['media'],
        summary: 'Upload an image to send',
        description:
          'Requires the `send:image` scope. A multipart form with one JPEG or PNG file in `file`, ' +
          "its type told by its bytes; the answer's `mediaId` is what `send-image` takes.",
        security: [{ apiKey: [] }],
        [MULTIPART_BODY]: MediaUploadForm,
        response: {
          201: MediaUploaded,
          ...errorResponses(
            'VALIDATION_ERROR',
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'INSUFFICIENT_SCOPE',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'PLATFORM_ERROR',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const image = await readUploadedImage(request, config.MEDIA_MAX_BYTES)
      const mediaId = uploadToPlatform ? await uploadToPlatform(image, request.log) : randomUUID()
      const { mimeType, size, sha256 } = image
      const stored = await insertMedia(db, {
        id: mediaId,
        apiKeyId: request.apiKey.id,
        mimeType,
        size,
        sha256,
        data: uploadToPlatform ? null : image.bytes,
      })
      if (!stored) {
        throw new AppError('PLATFORM_ERROR', 'The messaging platform answered with a media id already in use')
      }
      request.log.info({ mediaId, mimeType, size, platform: config.platform }, 'media uploaded')
      return reply.code(201).send({ mediaId, mimeType, size, sha256 })
    },
  )
}
