import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    requireAdmin(request: FastifyRequest): Promise<void>
    /** The name of the admin whose token this is, compared in constant time. */
    adminByToken(token: string): string | undefined
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
 * Admins authenticate with `Authorization: Bearer <token>`, tokens being named pairs from config,
 * or, without that header, with the console's session cookie (console/session-auth.ts).
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
    app.decorate('adminByToken', adminOf)
    const refused = () =>
      new AppError('ADMIN_AUTH_REQUIRED', 'A valid admin token is required (Authorization: Bearer <token>)', {
        'www-authenticate': 'Bearer',
      })
    const sessionEnded = () =>
      new AppError('ADMIN_AUTH_REQUIRED', 'The console session has ended or is not valid; sign in again')
    app.decorate('requireAdmin', async (request: FastifyRequest) => {
      if (request.headers.authorization === undefined) {
        // The console's session, in place of the header. A cookie guesses nothing (256 random bits):
        // it is not counted, but an address past its failures is refused all the same.
        await app.authFailureLimits.admin.guard(request, false)
        const session = await app.sessionOf(request, 'admin', sessionEnded)
        if (!session) throw refused()
        request.adminName = session.actor
        return
      }
      const match = /^Bearer ([^\s]+)$/i.exec(request.headers.authorization)
      const actor = match ? adminOf(match[1] as string) : undefined
      await app.authFailureLimits.admin.guard(request, !actor)
      if (!actor) throw refused()
      request.adminName = actor
    })
  },
  { name: 'admin-auth', dependencies: ['auth-failure-limit', 'session-auth'] },
)
