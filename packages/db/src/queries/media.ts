import type { Db } from '../client.ts'
import { type MediaRow, media } from '../schema/media.ts'

export type NewMedia = Pick<MediaRow, 'id' | 'apiKeyId' | 'mimeType' | 'size' | 'sha256'> & {
  /**
   * The bytes, kept only with the sandbox and only for images and stickers (larger kinds go to
   * MEDIA_DIR); with the Cloud API the platform holds them.
   */
  data: Buffer | null
}

/**
 * Records an uploaded file. Returns false, storing nothing, when the id is already taken (a
 * platform that answered with an id it gave before).
 */
export async function insertMedia(db: Db, row: NewMedia): Promise<boolean> {
  const inserted = await db
    .insert(media)
    .values(row)
    .onConflictDoNothing({ target: media.id })
    .returning({ id: media.id })
  return inserted.length === 1
}
