import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RedisClient } from '@dispatch/contracts/redis'

/**
 * Browser sessions of the console (admins) and the portal (a key holder). The browser holds only a
 * random id in an `HttpOnly` cookie; Redis holds what it stands for, under the id's SHA-256 (a copy
 * of Redis gives no live session), for a fixed lifetime from sign-in. An admin's token and a key
 * are never kept: an admin session names the admin, a portal session the key's hash, which is
 * looked up as a presented key is, so a revoked key ends its sessions at once.
 */
export type SessionKind = 'admin' | 'portal'

/** One cookie name per kind: a portal cookie is never read where an admin one is expected. */
export const SESSION_COOKIES: Record<SessionKind, string> = {
  admin: 'dispatch_console',
  portal: 'dispatch_portal',
}

/** The header a change made with a session cookie carries: the session's CSRF token. */
export const CSRF_HEADER = 'x-csrf-token'

export interface StoredSession {
  kind: SessionKind
  /** The admin's name, or the key's id. */
  actor: string
  /** A portal session's key, as `hashApiKey` gives it. */
  keyHash?: string
  csrfToken: string
  expiresAt: string
}

export interface SessionStoreOptions {
  redis: RedisClient
  prefix: string
  ttlMs: number
  clock: () => Date
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')
const token = () => randomBytes(32).toString('base64url')
/** A cookie value we could have made: 43 base64url characters (32 random bytes). */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/

export class SessionStore {
  readonly ttlMs: number
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #clock: () => Date

  constructor(options: SessionStoreOptions) {
    this.ttlMs = options.ttlMs
    this.#redis = options.redis
    this.#prefix = `${options.prefix}:console-session:`
    this.#clock = options.clock
  }

  async create(
    kind: SessionKind,
    actor: string,
    keyHash?: string,
  ): Promise<{ id: string; session: StoredSession }> {
    const id = token()
    const session: StoredSession = {
      kind,
      actor,
      ...(keyHash ? { keyHash } : {}),
      csrfToken: token(),
      expiresAt: new Date(this.#clock().getTime() + this.ttlMs).toISOString(),
    }
    await this.#redis.set(this.#key(id), JSON.stringify(session), 'PX', this.ttlMs)
    return { id, session }
  }

  /** The live session of that kind the cookie value stands for, if any. */
  async find(kind: SessionKind, id: string | undefined): Promise<StoredSession | undefined> {
    if (!id || !SESSION_ID.test(id)) return undefined
    const stored = await this.#redis.get(this.#key(id))
    if (!stored) return undefined
    const session = JSON.parse(stored) as StoredSession
    if (session.kind !== kind) return undefined
    // Redis drops it at its lifetime; a clock ahead of Redis' (tests, skew) ends it no later.
    if (Date.parse(session.expiresAt) <= this.#clock().getTime()) return undefined
    return session
  }

  async end(id: string | undefined): Promise<void> {
    if (id && SESSION_ID.test(id)) await this.#redis.del(this.#key(id))
  }

  #key(id: string) {
    return `${this.#prefix}${sha256(id)}`
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
