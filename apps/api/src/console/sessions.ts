import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RedisClient } from '@dispatch/runtime/redis'

/**
 * Browser sessions of the console (admins) and the portal (a key holder). The browser holds only a
 * random id in an `HttpOnly` cookie; Redis holds what it stands for, under the id's SHA-256 (a copy
 * of Redis gives no live session). A session ends at its lifetime from sign-in, after an idle
 * spell, at sign-out, or when what it stands for is gone:
 * - an admin session names the admin and a fingerprint of the admin's token as it was at sign-in:
 *   an admin removed from `ADMIN_TOKENS`, or whose token changed, has no live session, on any
 *   instance, from its next start on (the check is against this process's configuration);
 * - a portal session names the key's hash, which is looked up as a presented key is, so a revoked
 *   key ends its sessions at once.
 * Admins' sessions are also listed per admin, so `endAllOf` can end every one of them.
 */
export type SessionKind = 'admin' | 'portal'

/** The header a change made with a session cookie carries: the session's CSRF token. */
export const CSRF_HEADER = 'x-csrf-token'

export interface StoredSession {
  kind: SessionKind
  /** The admin's name, or the key's id. */
  actor: string
  /** A portal session's key, as `hashApiKey` gives it. */
  keyHash?: string
  /** An admin session's token fingerprint (`adminTokenFingerprint`), never the token. */
  tokenFingerprint?: string
  csrfToken: string
  expiresAt: string
  /** When the session was last used (to within `touchEveryMs`): it ends `idleMs` after that. */
  lastSeenAt: string
}

export interface SessionStoreOptions {
  redis: RedisClient
  prefix: string
  /** The absolute lifetime from sign-in. */
  ttlMs: number
  /** How long a session may go unused. */
  idleMs: number
  /** The admins and tokens configured now: a session of any other, or of an older token, is over. */
  adminTokens: ReadonlyArray<{ name: string; token: string }>
  clock: () => Date
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')
const token = () => randomBytes(32).toString('base64url')
/** A cookie value we could have made: 43 base64url characters (32 random bytes). */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/

/**
 * What an admin session keeps of the admin's token: a digest of the name and token under a label of
 * its own (not the digest admin-auth compares), enough to see the token changed, useless to sign in.
 */
export const adminTokenFingerprint = (name: string, adminToken: string) =>
  sha256(`dispatch console session\u0000${name}\u0000${adminToken}`)

export class SessionStore {
  readonly ttlMs: number
  readonly idleMs: number
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #clock: () => Date
  readonly #fingerprints: Map<string, string>
  /** Last-use times are written at most this often per session (a write per request is not needed). */
  readonly #touchEveryMs: number

  constructor(options: SessionStoreOptions) {
    this.ttlMs = options.ttlMs
    this.idleMs = options.idleMs
    this.#redis = options.redis
    this.#prefix = `${options.prefix}:console-session:`
    this.#clock = options.clock
    this.#fingerprints = new Map(
      options.adminTokens.map(({ name, token }) => [name, adminTokenFingerprint(name, token)]),
    )
    this.#touchEveryMs = Math.min(60_000, Math.floor(options.idleMs / 10))
  }

  async create(
    kind: SessionKind,
    actor: string,
    keyHash?: string,
  ): Promise<{ id: string; session: StoredSession }> {
    const id = token()
    const now = this.#clock().getTime()
    const tokenFingerprint = kind === 'admin' ? this.#fingerprints.get(actor) : undefined
    if (kind === 'admin' && !tokenFingerprint) throw new Error(`No admin named ${actor} is configured`)
    const session: StoredSession = {
      kind,
      actor,
      ...(keyHash ? { keyHash } : {}),
      ...(tokenFingerprint ? { tokenFingerprint } : {}),
      csrfToken: token(),
      expiresAt: new Date(now + this.ttlMs).toISOString(),
      lastSeenAt: new Date(now).toISOString(),
    }
    const key = this.#key(id)
    await this.#redis.set(key, JSON.stringify(session), 'PX', this.#redisTtl(session, now))
    if (kind === 'admin') {
      const index = this.#adminIndex(actor)
      await this.#redis.sadd(index, key)
      await this.#redis.pexpire(index, this.ttlMs)
    }
    return { id, session }
  }

  /**
   * The live session of that kind the cookie value stands for, if any. A session found over (idle,
   * or its admin or admin token gone) is deleted on the way.
   */
  async find(kind: SessionKind, id: string | undefined): Promise<StoredSession | undefined> {
    if (!id || !SESSION_ID.test(id)) return undefined
    const key = this.#key(id)
    const stored = await this.#redis.get(key)
    if (!stored) return undefined
    const session = JSON.parse(stored) as StoredSession
    if (session.kind !== kind) return undefined
    const now = this.#clock().getTime()
    // Redis drops it at its lifetime; a clock ahead of Redis' (tests, skew) ends it no later.
    if (Date.parse(session.expiresAt) <= now) return undefined
    // Idle, or from before idle timeouts (no lastSeenAt: NaN compares false), or its admin gone.
    if (!this.#stillStandsFor(session) || !(Date.parse(session.lastSeenAt) + this.idleMs > now)) {
      await this.#redis.del(key)
      return undefined
    }
    if (now - Date.parse(session.lastSeenAt) >= this.#touchEveryMs) {
      const touched = { ...session, lastSeenAt: new Date(now).toISOString() }
      // XX: a session ended meanwhile (sign-out, revocation) is not brought back.
      await this.#redis.set(key, JSON.stringify(touched), 'PX', this.#redisTtl(touched, now), 'XX')
      return touched
    }
    return session
  }

  async end(id: string | undefined): Promise<void> {
    if (id && SESSION_ID.test(id)) await this.#redis.del(this.#key(id))
  }

  /** Ends every console session of that admin, on every instance; answers how many were live. */
  async endAllOf(admin: string): Promise<number> {
    const index = this.#adminIndex(admin)
    const keys = await this.#redis.smembers(index)
    // One command per key: on a Redis Cluster without a hash tag in the prefix, they may sit on
    // different shards.
    const deleted = await Promise.all(keys.map((key) => this.#redis.del(key)))
    await this.#redis.del(index)
    return deleted.reduce((sum, count) => sum + count, 0)
  }

  /** An admin session stands only for an admin configured now, with the token it signed in with. */
  #stillStandsFor(session: StoredSession): boolean {
    if (session.kind !== 'admin') return true
    const current = this.#fingerprints.get(session.actor)
    return current !== undefined && current === session.tokenFingerprint
  }

  /** Redis keeps a session no longer than its lifetime, nor than its idle timeout from its last use. */
  #redisTtl(session: StoredSession, now: number): number {
    return Math.max(1, Math.min(Date.parse(session.expiresAt) - now, this.idleMs + this.#touchEveryMs))
  }

  #key(id: string) {
    return `${this.#prefix}${sha256(id)}`
  }

  #adminIndex(admin: string) {
    return `${this.#prefix}admin:${sha256(admin)}`
  }
}

/** The CSRF token a request carries matches its session's, compared in constant time. */
export function csrfMatches(session: StoredSession, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string') return false
  const given = Buffer.from(sha256(presented))
  return timingSafeEqual(given, Buffer.from(sha256(session.csrfToken)))
}

/** Requests that change nothing need no CSRF token. */
export const isSafeMethod = (method: string) => method === 'GET' || method === 'HEAD' || method === 'OPTIONS'
