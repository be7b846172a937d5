import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    requireAdmin(request: FastifyRequest): Promise<void>
  }
  interface FastifyRequest {
    /** The name of the admin token that authenticated the request: the actor in the audit log. */
    adminName: string
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Finds whose secret a presented one is: compared with every configured one in constant time
 * (SHA-256 digests of equal length, no early exit), so timing reveals neither a match nor its
 * position. The admin API presents tokens; the queue dashboard, `name:token` pairs.
 */
export function adminMatcher(admins: ReadonlyArray<{ name: string; secret: string }>) {
  const digests = admins.map(({ name, secret }) => ({ name, digest: digest(secret) }))
  return (presented: string): string | undefined => {
    const given = digest(presented)
    let actor: string | undefined
    for (const admin of digests) {
      if (timingSafeEqual(given, admin.digest)) actor ??= admin.name
    }
    return actor
  }
}

/**
 * Admins authenticate with `Authorization: Bearer <token>`; tokens are named pairs from config.
 * The presented token is compared with every configured one in constant time (hashes of equal
 * length, no early exit), so timing reveals neither a match nor its position.
 * Every admin request asks the failure limiter first: an address past its failed attempts gets 429
 * even with the right token, so guessing on cannot tell a hit from a miss.
 */
export const adminAuth = fp(
  async (app: FastifyInstance) => {
    const adminOf = adminMatcher(
      app.deps.config.adminTokens.map(({ name, token }) => ({ name, secret: token })),
    )

    app.decorateRequest('adminName', '')
    app.decorate('requireAdmin', async (request: FastifyRequest) => {
      const match = /^Bearer ([^\s]+)$/i.exec(request.headers.authorization ?? '')
      const found = adminOf(match?.[1] ?? '')
      const actor = match ? found : undefined
      // A request without credentials guesses nothing: it is not counted, but is refused when blocked.
      const failed = !actor && request.headers.authorization !== undefined
      await app.authFailureLimits.admin.guard(request, failed)
      if (!actor) {
        throw new AppError(
          'ADMIN_AUTH_REQUIRED',
          'A valid admin token is required (Authorization: Bearer <token>)',
          {
            'www-authenticate': 'Bearer',
          },
        )
      }
      request.adminName = actor
    })
  },
  { name: 'admin-auth', dependencies: ['auth-failure-limit'] },
)
