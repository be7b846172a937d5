import Type, { type Static } from 'typebox'

/** What `POST /api/third-party/media` takes, as the Cloud API takes images: told apart by their bytes. */
export const MEDIA_MIME_TYPES = ['image/jpeg', 'image/png'] as const
export type MediaMimeType = (typeof MEDIA_MIME_TYPES)[number]

/** The multipart form of an upload: one file, in the field `file`, and nothing else. */
export const MediaUploadForm = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      description: 'A JPEG or PNG image, up to MEDIA_MAX_BYTES (5 MiB by default)',
    }),
  },
  { additionalProperties: false },
)

export const MediaUploaded = Type.Object(
  {
    /** What `send-image` takes as `image.mediaId`. */
    mediaId: Type.String({
      description: "The platform's media id with the Cloud API; a UUID with the sandbox",
    }),
    mimeType: Type.Enum(MEDIA_MIME_TYPES, { description: "The type the file's bytes say it is" }),
    size: Type.Integer({ minimum: 1, description: 'Bytes' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: "SHA-256 of the file's bytes, hex" }),
  },
  { additionalProperties: false },
)
export type MediaUploaded = Static<typeof MediaUploaded>
