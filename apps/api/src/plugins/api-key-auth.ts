import { randomUUID } from 'node:crypto'
import { API_KEY_INVALIDATION_CHANNEL } from '@dispatch/contracts'
import { type ApiKeyRow, findApiKeyByHash, hashApiKey, keyPrefixFor } from '@dispatch/db'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, unavailable } from '../errors.ts'
import { ApiKeyCache } from './api-key-cache.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** An onRequest hook that admits only an active key of this environment, with `scope` if given. */
    requireApiKey(scope?: string): onRequestHookHandler
    /** Tells every API instance to drop its cached copy of the key (after a status change). */
    publishApiKeyChange(id: string): Promise<void>
    apiKeyCache: ApiKeyCache
    /** The approved key a raw key is (with `scope` if given), refused as the header's would be. */
    apiKeyOf(request: FastifyRequest, raw: string, scope?: string): Promise<ApiKeyRow>
  }
  interface FastifyRequest {
    apiKey: ApiKeyRow
  }
}

export const apiKeyAuth = fp(
  async (app: FastifyInstance) => {
    const { config, db, redis, redisSubscriber } = app.deps
    const cache = new ApiKeyCache({
      ttlMs: config.API_KEY_CACHE_TTL_MS,
      maxEntries: config.API_KEY_CACHE_MAX,
      staleIfErrorMs: config.API_KEY_STALE_IF_ERROR_MS,
      onLookup: app.metrics?.keyCacheLookup,
    })
    const channel = `${config.QUEUE_PREFIX}:${API_KEY_INVALIDATION_CHANNEL}`
    const envPrefix = keyPrefixFor(config.APP_ENV)

    let connectedBefore = false
    const onReady = () => {
      // Messages published while we were disconnected are lost: start from a clean cache.
      if (connectedBefore) cache.clear()
      connectedBefore = true
    }
    // Messages are "<instance> <key id>". An instance evicts locally before publishing, so its own
    // echo, arriving later, would only throw away an entry cached since: it is ignored.
    const instanceId = randomUUID()
    const onMessage = (from: string, message: string) => {
      const [origin, id] = message.split(' ')
      if (from === channel && id && origin !== instanceId) cache.evictKey(id)
    }
    redisSubscriber.on('ready', onReady)
    redisSubscriber.on('message', onMessage)
    await redisSubscriber.subscribe(channel).catch((error: Error) => {
      app.log.warn({ err: error }, 'api-key invalidation channel not subscribed yet; retries on reconnect')
    })
    app.addHook('onClose', async () => {
      redisSubscriber.off('ready', onReady)
      redisSubscriber.off('message', onMessage)
    })

    app.decorateRequest('apiKey', null as unknown as ApiKeyRow)
    app.decorate('apiKeyCache', cache)
    app.decorate('publishApiKeyChange', async (id: string) => {
      cache.evictKey(id)
      try {
        await redis.publish(channel, `${instanceId} ${id}`)
      } catch (error) {
        app.log.warn(
          { err: error, apiKeyId: id },
          'could not publish api-key change; other instances catch up by TTL',
        )
      }
    })

    // A valid cached key costs no Redis round trip: only the failure path and keys not yet cached
    // ask Redis. An address past its invalid keys gets 429 for each further invalid one and for
    // any key this instance has not cached (counted before the lookup, so guessing costs Postgres
    // nothing); a cached valid key from it still passes: keys are 192 random bits, so telling a
    // hit from a miss gives guessing nothing, and senders sharing an address with an attacker (a
    // NAT) whose keys are in use keep working.
    const invalidKeyError = () => new AppError('API_KEY_INVALID', 'The API key is not valid')
    const invalidKey = async (request: FastifyRequest) => {
      await app.authFailureLimits.apiKey.guard(request, true)
      return invalidKeyError()
    }

    const sessionEnded = () =>
      new AppError('API_KEY_INVALID', 'The portal session has ended or is not valid; sign in again')

    /**
     * Why a found key is refused here, or undefined when it passes: `invalid` for a key of another
     * environment (answered as an unknown key, and counted as one), else the error to answer.
     */
    const refusal = (key: ApiKeyRow, scope: string | undefined): AppError | 'invalid' | undefined => {
      if (key.environment !== config.APP_ENV) return 'invalid'
      if (key.status !== 'approved') {
        return new AppError(
          'API_KEY_NOT_ACTIVE',
          `The API key is ${key.status}; only approved keys can be used`,
        )
      }
      if (scope && !key.scopes.includes(scope)) {
        return new AppError('INSUFFICIENT_SCOPE', `The API key lacks the "${scope}" scope`)
      }
      return undefined
    }

    /**
     * The approved key of this environment with this hash, with `scope` if given. `cached` is the
     * cache's answer when the caller already asked it (`undefined`: nothing fresh there).
     */
    const keyByHash = async (
      request: FastifyRequest,
      hash: string,
      scope: string | undefined,
      cached: ApiKeyRow | null | undefined = undefined,
    ) => {
      let key = cached
      const limiter = app.authFailureLimits.apiKey
      if (key === undefined) {
        // Not in the cache. The lookup of a key this instance never found real is counted as a
        // failure before Postgres is asked, inside the lookup that concurrent requests with the
        // same key share, and refunded once the key is found real: an address past its invalid
        // keys costs no lookup, and a burst of one busy key costs one count, not one a request.
        // A real key whose entry expired is read again uncounted. A cached key, valid or
        // unknown, never comes here: the valid one costs no Redis call.
        const known = cache.holdsKey(hash)
        let counted = false
        try {
          key = await cache.get(hash, async () => {
            if (!known) {
              await limiter.guard(request, true)
              counted = true
            }
            const found = (await findApiKeyByHash(db, hash)) ?? null
            if (counted && found && found.environment === config.APP_ENV) await limiter.refund(request)
            return found
          })
        } catch (error) {
          if (error instanceof AppError) throw error // the limiter's 429, shared by the lookup's joiners
          request.log.error({ err: error }, 'api-key lookup failed')
          if (counted) await limiter.refund(request)
          throw unavailable('check API keys')
        }
        // An unknown key (null) and one of another environment are refused alike, each request
        // counted once (the one whose lookup counted it already is).
        const refused = key && refusal(key, scope)
        if (!key || refused === 'invalid') throw counted ? invalidKeyError() : await invalidKey(request)
        if (refused) throw refused
        return key
      }
      const refused = key && refusal(key, scope)
      if (!key || refused === 'invalid') throw await invalidKey(request)
      if (refused) throw refused
      return key
    }

    /** The key the `x-api-key` header carries (its first, if repeated). */
    const headerKey = (request: FastifyRequest) => {
      const header = request.headers['x-api-key']
      return Array.isArray(header) ? header[0] : header
    }

    const keyOf = async (request: FastifyRequest, raw: string, scope?: string) => {
      if (!raw.startsWith(envPrefix)) throw await invalidKey(request)
      return keyByHash(request, hashApiKey(raw), scope)
    }

    const authenticate = async (request: FastifyRequest, scope: string | undefined) => {
      const raw = headerKey(request)
      if (raw) {
        request.apiKey = await keyOf(request, raw, scope)
        return
      }
      // The portal's session, in place of the header: it names the key by its hash, looked up
      // as a presented key is, so a key revoked since ends the session's use at once.
      const session = await app.sessionOf(request, 'portal', sessionEnded)
      if (!session?.keyHash) throw new AppError('API_KEY_MISSING', 'The x-api-key header is required')
      request.apiKey = await keyByHash(request, session.keyHash, scope)
    }

    app.decorate('apiKeyOf', keyOf)
    // A key in the header that is cached and passes is checked at once, without a promise: the
    // path of nearly every send (each promise and its microtask measurable there). Anything else
    // (not cached, refused, the portal's session) takes the long way, with its errors.
    app.decorate('requireApiKey', (scope?: string): onRequestHookHandler => {
      return (request, _reply, done) => {
        const raw = headerKey(request)
        if (raw?.startsWith(envPrefix)) {
          const hash = hashApiKey(raw)
          const cached = cache.peek(hash)
          if (cached && refusal(cached, scope) === undefined) {
            request.apiKey = cached
            done()
            return
          }
          keyByHash(request, hash, scope, cached).then((key) => {
            request.apiKey = key
            done()
          }, done)
          return
        }
        authenticate(request, scope).then(() => done(), done)
      }
    })
  },
  { name: 'api-key-auth', dependencies: ['auth-failure-limit', 'metrics', 'session-auth'] },
)
