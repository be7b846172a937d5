import { STATUS_CODES } from 'node:http'
import { ErrorBody } from '@dispatch/contracts'
import type { LightMyRequestResponse } from 'fastify'
import Value from 'typebox/value'

/**
 * The attack matrix's parts (attack-matrix.test.ts): the operations, read from the API's own
 * OpenAPI document, the requests each attacker makes of them, and the judge of each answer.
 */

export interface Parameter {
  in: string
  name: string
}
export interface Operation {
  parameters?: (Parameter | { $ref: string })[]
  requestBody?: { content: Record<string, unknown> }
  security?: Record<string, string[]>[]
}
export interface Endpoint {
  /** `GET /api/third-party/messages/{messageId}`, as the document names it. */
  name: string
  /** The name the document gives it (an undocumented alias names the documented operation). */
  documented: string
  method: string
  path: string
  operation: Operation
  /** Which credentials the operation takes, from its `security`. */
  audience: 'public' | 'admin' | 'key'
  pathParams: string[]
  queryParams: string[]
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch'])

export function endpointsOf(document: { paths: Record<string, Record<string, Operation>> }): Endpoint[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => {
        const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement))
        const audience =
          schemes.length === 0
            ? 'public'
            : schemes.some((s) => s === 'apiKey' || s === 'portalSession')
              ? 'key'
              : 'admin'
        const params = (operation.parameters ?? []).filter((p): p is Parameter => 'name' in p)
        return {
          name: `${method.toUpperCase()} ${path}`,
          documented: `${method.toUpperCase()} ${path}`,
          method: method.toUpperCase(),
          path,
          operation,
          audience,
          pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
          queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        } satisfies Endpoint
      }),
  )
}

/** The path with each parameter replaced by `values[name]`, encoded. */
export const fillPath = (path: string, values: Record<string, string>) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name]
    if (value === undefined) throw new Error(`no value for {${name}} in ${path}`)
    return encodeURIComponent(value)
  })

/** Each combination of one value per parameter (a few values each: the product stays small). */
export function combinations(choices: Record<string, string[]>): Record<string, string>[] {
  return Object.entries(choices).reduce<Record<string, string>[]>(
    (acc, [name, values]) => acc.flatMap((partial) => values.map((value) => ({ ...partial, [name]: value }))),
    [{}],
  )
}

export interface Attack {
  /** The operation, as the document names it. */
  operation: string
  /** Who calls, in words: `tenant evil's key`, `no credential`. */
  attacker: string
  /** What this call tries, beyond the operation: `{id}=acme's suppression`, `?tenantId=acme`. */
  detail: string
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
  /** 2xx is a legitimate answer: the operation reads or writes the caller's own data. */
  ownData: boolean
}

export const attackName = (a: Pick<Attack, 'operation' | 'attacker' | 'detail'>) =>
  `${a.operation} by ${a.attacker}${a.detail ? ` (${a.detail})` : ''}`

/** The refusals an attacker may get: 401, 403 or 404, in the spec's error body. */
export function refusalProblem(res: LightMyRequestResponse): string | undefined {
  if (![401, 403, 404].includes(res.statusCode)) return `answered ${res.statusCode}, not 401, 403 or 404`
  let body: unknown
  try {
    body = res.json()
  } catch {
    return `answered ${res.statusCode} without a JSON error body`
  }
  if (!Value.Check(ErrorBody, body)) return `answered ${res.statusCode} without the error body`
  const { statusCode, error } = body as { statusCode: number; error: string }
  if (statusCode !== res.statusCode || error !== STATUS_CODES[res.statusCode]) {
    return `answered ${res.statusCode} with an error body saying ${statusCode} ${error}`
  }
  return undefined
}

/**
 * What of the victim's `secrets` (name → value) an answer shows. A value the attacker put in its
 * own request (a phone it names) is not a leak when the answer repeats it.
 */
export function leaks(body: string, secrets: Record<string, string>, request: string): string[] {
  return Object.entries(secrets)
    .filter(([, value]) => body.includes(value) && !request.includes(value))
    .map(([name]) => name)
}

/**
 * Every route the app serves, as `METHOD /path/:param` (HEAD left out), from Fastify's route tree
 * (`printRoutes({ commonPrefix: false })`): the routes outside the OpenAPI document too.
 */
export function registeredRoutes(tree: string): string[] {
  const stack: string[] = []
  const routes: string[] = []
  for (const line of tree.split('\n')) {
    const match = line.match(/^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/u)
    if (!match) continue
    const depth = [...(match[1] ?? '')].length / 4
    const path = (stack[depth - 1] ?? '') + match[2]
    stack[depth] = path
    stack.length = depth + 1
    for (const method of (match[3] ?? '').split(', ')) {
      if (method && method !== 'HEAD') routes.push(`${method} ${path}`)
    }
  }
  return routes
}

/**
 * Fastify prints a parameter that two routes of one path name differently as `:a|:b`
 * (`/suppressions/:idOrRecipient|:id`, GET's and DELETE's): the route is any one of them.
 */
export function alternatives(path: string): string[] {
  const at = path.search(/:[^/|]+\|/)
  if (at < 0) return [path]
  const end = path.indexOf('/', at)
  const segment = path.slice(at, end < 0 ? undefined : end)
  return segment.split('|').flatMap((name) => alternatives(path.replace(segment, name)))
}

/** The document's `{name}` as Fastify writes it (`:name`). */
export const fastifyPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1')
