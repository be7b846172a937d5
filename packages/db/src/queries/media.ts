import { and, desc, eq, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { inboundMediaId, inboundMessages } from '../schema/inbound-messages.ts'
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

/** An inbound message's media, as the key it was routed to may fetch it. */
export interface InboundMediaRef {
  /** The business number that received it: its token fetches the media. */
  phoneNumberId: string
  mimeType: string | null
}

/**
 * The latest inbound message routed to this key whose media has this platform id (by the index on
 * `content->'media'->>'id'`), with the sender that received it; undefined for another key's or an
 * unknown id.
 */
export async function findInboundMedia(
  db: Db,
  mediaId: string,
  apiKeyId: string,
): Promise<InboundMediaRef | undefined> {
  const [row] = await db
    .select({
      phoneNumberId: inboundMessages.phoneNumberId,
      mimeType: sql<string | null>`${inboundMessages.content}->'media'->>'mimeType'`,
    })
    .from(inboundMessages)
    .where(and(eq(inboundMediaId, mediaId), eq(inboundMessages.apiKeyId, apiKeyId)))
    .orderBy(desc(inboundMessages.receivedAt))
    .limit(1)
  return row
}
