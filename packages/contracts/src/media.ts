import Type, { type Static } from 'typebox'
import { Scopes } from './scopes.ts'

/** The kinds of media WhatsApp sends, each with its own types, limit and send scope. */
export const MEDIA_KINDS = ['image', 'video', 'audio', 'document', 'sticker'] as const
export type MediaKind = (typeof MEDIA_KINDS)[number]

/**
 * What `POST /api/third-party/media` takes, as the Cloud API takes media, each told apart by its
 * bytes (docs/media.md says how).
 */
export const MEDIA_MIME_TYPES = [
  'image/jpeg',
  'image/png',
  'video/mp4',
  'video/3gpp',
  'audio/aac',
  'audio/amr',
  'audio/mpeg',
  'audio/mp4',
  'audio/ogg',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/msword',
  'application/vnd.ms-excel',
  'application/vnd.ms-powerpoint',
  'text/plain',
  'image/webp',
] as const
export type MediaMimeType = (typeof MEDIA_MIME_TYPES)[number]

const KiB = 1024
const MiB = 1024 * KiB

/** Meta's limit per kind, in bytes (its "MB" and "KB" read as MiB and KiB). */
export const MEDIA_LIMITS = {
  image: 5 * MiB,
  video: 16 * MiB,
  audio: 16 * MiB,
  document: 100 * MiB,
  /** A static sticker; an animated one may reach `ANIMATED_STICKER_MAX_BYTES`. */
  sticker: 100 * KiB,
} as const satisfies Record<MediaKind, number>
export const ANIMATED_STICKER_MAX_BYTES = 500 * KiB
/** The largest file of any kind: the upload form's own limit by default. */
export const MEDIA_MAX_BYTES = 100 * MiB

/** The scope an upload of each kind needs (and its send). */
export const MEDIA_SCOPES = {
  image: Scopes.sendImage,
  video: Scopes.sendVideo,
  audio: Scopes.sendAudio,
  document: Scopes.sendDocument,
  sticker: Scopes.sendSticker,
} as const satisfies Record<MediaKind, string>

/** The multipart form of an upload: one file, in the field `file`, and nothing else. */
export const MediaUploadForm = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      description:
        'An image (JPEG, PNG; 5 MiB), video (MP4, 3GPP; 16 MiB), audio (AAC, AMR, MP3, M4A, OGG Opus; ' +
        '16 MiB), document (PDF, Word, Excel, PowerPoint, plain text; 100 MiB) or sticker (WebP; ' +
        '100 KiB, 500 KiB animated), its type told by its bytes; never more than MEDIA_MAX_BYTES',
    }),
  },
  { additionalProperties: false },
)

export const MediaUploaded = Type.Object(
  {
    /** What a send of this kind takes as its `mediaId`. */
    mediaId: Type.String({
      description: "The platform's media id with the Cloud API; a UUID with the sandbox",
    }),
    kind: Type.Enum(MEDIA_KINDS, { description: "The kind of media the file's bytes say it is" }),
    mimeType: Type.Enum(MEDIA_MIME_TYPES, { description: "The type the file's bytes say it is" }),
    size: Type.Integer({ minimum: 1, description: 'Bytes' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: "SHA-256 of the file's bytes, hex" }),
  },
  { additionalProperties: false },
)
export type MediaUploaded = Static<typeof MediaUploaded>

export const MediaContentParams = Type.Object(
  {
    mediaId: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[A-Za-z0-9._:-]+$',
      description: "The platform's id of an inbound message's media (its `content.media.id`)",
    }),
  },
  { additionalProperties: false },
)
