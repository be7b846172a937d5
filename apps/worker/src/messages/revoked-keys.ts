import { API_KEY_INVALIDATION_CHANNEL } from '@dispatch/contracts'
import { type Db, findApiKeyById, listRevokedApiKeyIds } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'
import { AnnouncedSet } from './announced-set.ts'

/**
 * The revoked keys, so delivery checks a message's key at no round trip (`has`). A key's change is
 * announced on the API's key-invalidation channel (`<instance> <key id>`, published by the API
 * after a decision and by the revocation's sweep); a key is never un-revoked.
 */
export class RevokedKeys extends AnnouncedSet<true> {
  constructor(options: {
    db: Db
    subscriber: RedisClient
    prefix: string
    logger: Logger
    refreshMs?: number
  }) {
    const { db } = options
    super({
      ...options,
      name: 'revoked keys',
      channel: `${options.prefix}:${API_KEY_INVALIDATION_CHANNEL}`,
      readAll: async () => (await listRevokedApiKeyIds(db)).map((id) => [id, true] as const),
      idOf: (message) => message.split(' ')[1] || undefined,
      confirm: async (id) => ((await findApiKeyById(db, id))?.status === 'revoked' ? true : undefined),
    })
  }

  /** Whether the key was revoked (as this process last heard). */
  has(apiKeyId: string): boolean {
    return this.get(apiKeyId) === true
  }
}
