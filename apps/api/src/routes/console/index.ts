import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import helmet from '@fastify/helmet'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { authenticate } from '../authenticate.ts'

/** Where `pnpm --filter @dispatch/console build` leaves the pages, unless CONSOLE_DIST_DIR says. */
export const DEFAULT_CONSOLE_DIST = fileURLToPath(
  new URL('../../../../../packages/console/dist', import.meta.url),
)

/** The single-page app's two homes: admins' and key holders'. */
const BASES = ['/console', '/portal'] as const

/** Every file under a directory, as paths relative to it with forward slashes. */
function filesUnder(root: string, dir = ''): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = dir ? `${dir}/${entry.name}` : entry.name
    return entry.isDirectory() ? filesUnder(root, relative) : [relative]
  })
}

/**
 * The console (`/console`) and the portal (`/portal`): the built single-page app, as static files,
 * with strict security headers (a Content-Security-Policy without inline scripts or styles, no
 * framing). A path naming a built file gets that file (hashed assets cached for a year); any other
 * path under either base gets the app's page, which routes in the browser. Only these pages get
 * the headers: the API's JSON answers stay as they are, at no cost to the send path.
 */
export async function consolePages(app: FastifyInstance) {
  authenticate(app, 'public')
  const root = app.deps.config.CONSOLE_DIST_DIR ?? DEFAULT_CONSOLE_DIST
  if (!existsSync(path.join(root, 'index.html'))) {
    app.log.warn(
      { root },
      'the console is not built: /console and /portal answer 503 (pnpm --filter @dispatch/console build)',
    )
    for (const base of BASES) {
      app.get(`${base}/*`, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .code(503)
          .type('text/plain; charset=utf-8')
          .send('The console is not built: run `bash scripts/pnpm.sh --filter @dispatch/console build`.'),
      )
    }
    return
  }

  const files = new Set(filesUnder(root))
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    // The API answers same-origin only; nothing here is meant to be embedded elsewhere.
    crossOriginResourcePolicy: { policy: 'same-origin' },
  })
  await app.register(fastifyStatic, { root, serve: false })

  const page = (request: FastifyRequest<{ Params: { '*'?: string } }>, reply: FastifyReply) => {
    const wanted = request.params['*'] ?? ''
    if (files.has(wanted) && wanted !== 'index.html') {
      // Vite names built assets by their content: they never change under one name.
      const hashed = wanted.startsWith('assets/')
      return reply.sendFile(wanted, { immutable: hashed, maxAge: hashed ? '365d' : 0 })
    }
    return reply.header('cache-control', 'no-store').sendFile('index.html', { cacheControl: false })
  }
  for (const base of BASES) {
    app.get(base, { schema: { hide: true } }, page)
    app.get(`${base}/*`, { schema: { hide: true } }, page)
  }
}
