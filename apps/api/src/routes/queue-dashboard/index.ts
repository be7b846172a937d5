import { createBullBoard } from '@bull-board/api'
import { FastifyAdapter } from '@bull-board/fastify'
import basicAuth from '@fastify/basic-auth'
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify'
import { AppError, errorBody } from '../../errors.ts'
import { adminMatcher } from '../../plugins/admin-auth.ts'
import { authenticate } from '../authenticate.ts'
import { DashboardQueues } from './queues.ts'

/** The browser shows it in its sign-in prompt; the same for every admin page. */
export const ADMIN_REALM = 'Dispatch admin'

/** Reading is all the dashboard does: see `readOnly` below. */
const READ_METHODS = new Set(['GET', 'HEAD'])

const send = (reply: FastifyReply, error: AppError) =>
  reply
    .headers(error.headers)
    .code(error.statusCode)
    .send(errorBody(error.errorCode, error.statusCode, error.message))

/**
 * Bull Board at this group's prefix (`/admin/queues`): every queue, its counts per state, its jobs
 * with their data, errors and stack traces. Out of the OpenAPI document (Bull Board hides its routes).
 *
 * **Authentication.** HTTP Basic, so a browser prompts: the user name is the admin's name and the
 * password its token, from `ADMIN_TOKENS` (`name=token`). `name:token` is compared with every
 * configured pair in constant time (hashes of equal length, no early exit), as the admin API does.
 * Every request under the prefix passes here first (the page, its static files, its JSON API, and
 * any path that does not exist), and every one asks the admin brute-force limit: a request whose
 * credentials are wrong or malformed counts as a failure; an address past the limit gets 429, right
 * credentials included. A request with no credentials counts nothing and gets 401 with
 * `WWW-Authenticate: Basic realm="Dispatch admin"`.
 *
 * **Read-only.** Every queue is in Bull Board's read-only mode (no action buttons; its API answers
 * 405), and anything but GET and HEAD is refused here first with 405, logged at info with the admin's
 * name. Bull Board's actions would go around the service: a retried message job leaves its row
 * `failed` in Postgres and the client already told so, an edited or added job bypasses validation
 * and tenancy, a cleaned or emptied queue drops messages that were answered 202. Retrying failed
 * messages and pausing delivery are the admin API's, audited and kept in step with Postgres. And
 * the browser sends Basic credentials with any request to the site, including one a hostile page
 * makes: with nothing to change, there is nothing to forge.
 */
export async function queueDashboardRoutes(app: FastifyInstance) {
  // HTTP Basic (an admin's name and token), checked by the hook below for every route of Bull Board.
  authenticate(app, 'own')
  const adminOf = adminMatcher(
    app.deps.config.adminTokens.map(({ name, token }) => ({ name, secret: `${name}:${token}` })),
  )

  // The library parses the header (RFC 7617, UTF-8); it calls `validate` only for a well-formed one.
  await app.register(basicAuth, {
    validate: async (username, password, request) => {
      const actor = adminOf(`${username}:${password}`)
      if (!actor) throw new Error('wrong admin name or token')
      request.adminName = actor
    },
  })
  const checkCredentials = app.basicAuth as onRequestHookHandler

  app.addHook('onRequest', async (request, reply) => {
    const refused = await new Promise<Error | undefined>((resolve) => {
      checkCredentials.call(app, request, reply, resolve)
    })
    // Any credentials presented and not accepted are a guess; none at all guess nothing.
    const failed = refused !== undefined && request.headers.authorization !== undefined
    try {
      await app.authFailureLimits.admin.guard(request, failed)
    } catch (error) {
      if (error instanceof AppError) return send(reply, error)
      throw error
    }
    if (refused) {
      return send(
        reply,
        new AppError(
          'ADMIN_AUTH_REQUIRED',
          "Sign in with an admin's name as the user and its admin token as the password",
          { 'www-authenticate': `Basic realm="${ADMIN_REALM}"` },
        ),
      )
    }
    // Job data and errors are for this admin only: no cache keeps them, no other site frames them.
    reply.header('cache-control', 'no-store').header('x-frame-options', 'DENY')
    if (!READ_METHODS.has(request.method)) {
      request.log.info(
        { admin: request.adminName, method: request.method, url: request.url },
        'queue dashboard: change refused, the dashboard is read-only',
      )
      return send(
        reply,
        new AppError(
          'METHOD_NOT_ALLOWED',
          'The queue dashboard is read-only: retry messages and pause delivery through the admin API',
          { allow: 'GET, HEAD' },
        ),
      )
    }
  })

  // A path under the prefix that names nothing is answered only to a signed-in admin, like the rest.
  app.setNotFoundHandler((request, reply) =>
    send(reply, new AppError('NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`)),
  )

  const serverAdapter = new FastifyAdapter().setBasePath(app.prefix)
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Dispatch queues' } },
  })
  const queues = new DashboardQueues(app.deps, board, app.log)
  await app.register(serverAdapter.registerPlugin())

  app.addHook('onReady', async () => queues.start())
  app.addHook('onClose', () => queues.close())
}
