import { isDispatchId } from '@dispatch/contracts'
import type { FastifyInstance, preValidationHookHandler, RouteOptions } from 'fastify'
import { AppError } from '../errors.ts'

/** The path parameters of a route's schema that are ids of ours (`format: 'uuid'`: `PathId`). */
export function pathIdsOf(route: Pick<RouteOptions, 'schema'>): string[] {
  const params = route.schema?.params as { properties?: Record<string, { format?: string }> } | undefined
  return Object.entries(params?.properties ?? {})
    .filter(([, schema]) => schema?.format === 'uuid')
    .map(([name]) => name)
}

/** `webhook-endpoints` before `:id` → `webhook endpoint`: what a 404 says was not found. */
function nounBefore(url: string, name: string): string {
  const segments = url.split('/')
  const at = segments.indexOf(`:${name}`)
  const before = at > 0 ? (segments[at - 1] ?? '') : ''
  const noun = before.replace(/-/g, ' ').replace(/s$/, '')
  return noun && !noun.startsWith(':') ? noun : 'resource'
}

/**
 * One rule for every id in a path (`UUID_PATTERN` in @dispatch/contracts): as each route is added,
 * every path parameter its schema declares as an id (`PathId`) is judged before validation. An id
 * in our form goes on lower-cased; any other spelling (`urn:uuid:…`, `{…}`, junk) is 404
 * NOT_FOUND, as an unknown id is: never 400 for some routes and 404 for others, and never a query
 * that Postgres refuses (500). It runs after the route's authentication (`onRequest`), so a caller
 * without a credential learns nothing from it.
 */
export function installPathIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const names = pathIdsOf(route)
    if (names.length === 0) return
    const url = String(route.url)
    const judge: preValidationHookHandler = (request, _reply, done) => {
      const params = request.params as Record<string, string | undefined>
      for (const name of names) {
        const value = params[name]
        if (value === undefined) continue
        if (!isDispatchId(value)) {
          done(
            new AppError(
              'NOT_FOUND',
              `No such ${nounBefore(url, name)}: ${JSON.stringify(value)} is not an id Dispatch gives out ` +
                '(a UUID: 8-4-4-4-12 hex digits)',
            ),
          )
          return
        }
        params[name] = value.toLowerCase()
      }
      done()
    }
    const own = route.preValidation === undefined ? [] : [route.preValidation].flat()
    route.preValidation = [judge, ...own] as preValidationHookHandler[]
  })
}
