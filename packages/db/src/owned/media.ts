import type { Db } from '../client.ts'
import { findInboundMedia, insertMedia, type NewMedia } from '../queries/media.ts'
import type { Caller } from './caller.ts'

/**
 * A key's media: files it uploads are recorded under it, and an inbound message's media is found
 * only among the replies routed to it (another key's is as if absent).
 */
export function ownedMedia(db: Db, caller: Caller) {
  return {
    /** Records an upload of the key's; false when the id is taken (see `insertMedia`). */
    insert: (row: Omit<NewMedia, 'apiKeyId'>) => insertMedia(db, { ...row, apiKeyId: caller.apiKeyId }),
    /** The reply routed to the key carrying this platform media id, with the number that received it. */
    inbound: (mediaId: string) => findInboundMedia(db, mediaId, caller.apiKeyId),
  }
}
