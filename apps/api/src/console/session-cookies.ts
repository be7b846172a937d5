import type { FastifyRequest } from 'fastify'
import type { SessionKind } from './sessions.ts'

/**
 * The session cookies' names. Everywhere but plain HTTP on loopback, a cookie is `Secure` and named
 * `__Host-…`: a browser keeps such a cookie only if it came over a secure connection with `Path=/`
 * and no `Domain`, so no other host, subdomain or plain-HTTP page can set or shadow it.
 *
 * On plain HTTP to a loopback host (the quick start's http://127.0.0.1:3000, the browser tests) it
 * is neither: Chromium and Firefox count loopback as secure and would keep a `__Host-` cookie there
 * (checked with Chromium 156), but Safari drops every `Secure` cookie on http://localhost (WebKit
 * bug 281149), and so would a console that cannot sign in. Loopback traffic never leaves the
 * machine, so `Secure` would protect nothing there. One name per kind, so a portal cookie is never
 * read where an admin one is expected.
 */
const NAMES: Record<SessionKind, string> = { admin: 'dispatch_console', portal: 'dispatch_portal' }

export const cookieNameFor = (kind: SessionKind, loopback: boolean) =>
  loopback ? NAMES[kind] : `__Host-${NAMES[kind]}`

/** `localhost` (and its subdomains), 127.0.0.0/8 and ::1, as a browser names them in `Host`. */
const LOOPBACK_HOST = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/**
 * Whether the request came over plain HTTP to a loopback name (behind a trusted proxy, as its
 * `X-Forwarded-Proto` and `X-Forwarded-Host` say). The host is the browser's: a page elsewhere
 * cannot make a browser send a loopback one, so this relaxes nothing for any other site.
 */
export function isLoopbackRequest(request: FastifyRequest): boolean {
  if (request.protocol !== 'http') return false
  const host = (request.host ?? '').replace(/:\d+$/, '')
  return LOOPBACK_HOST.test(host)
}
