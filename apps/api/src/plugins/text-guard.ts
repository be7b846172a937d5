import { isStorableText } from '@dispatch/contracts'
import type { FastifyInstance } from 'fastify'
import { AppError } from '../errors.ts'

const PROBLEM = 'must not contain a NUL character or an unpaired surrogate'

/**
 * The first string in `value` that is not storable text, as a message naming where it is
 * (`body.image.mediaId`, `querystring.tenantId`, `body.variables` for a property name). Walks
 * without recursion, so no nesting depth can overflow the stack.
 */
export function findUnstorableText(value: unknown, root: string): string | undefined {
  const pending: [unknown, string][] = [[value, root]]
  while (pending.length > 0) {
    const [current, path] = pending.pop() as [unknown, string]
    if (typeof current === 'string') {
      if (!isStorableText(current)) return `${path} ${PROBLEM}`
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push([current[i], `${path}[${i}]`])
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [name, child] = entries[i] as [string, unknown]
        if (!isStorableText(name)) return `${path} has a property name that ${PROBLEM}`
        pending.push([child, `${path}.${name}`])
      }
    }
  }
  return undefined
}

/**
 * Every string a request brings (path parameters, query string, body, at any depth, property names
 * included) is refused with `400 VALIDATION_ERROR` naming the field when Postgres could not store it
 * or the platform could not deliver it. It runs before validation and before any route's own
 * pre-validation, on every route present and future, so nothing with such text is ever queued.
 * The platform's webhook is the one route whose input is stored rather than refused: its body
 * parser makes the text storable first (`routes/webhooks/platform-text.ts`).
 */
export function installTextGuard(app: FastifyInstance) {
  // A callback, not a promise: it runs on every request (a thrown error reaches the error handler
  // all the same).
  app.addHook('preValidation', (request, _reply, done) => {
    const problem =
      findUnstorableText(request.params, 'params') ??
      findUnstorableText(request.query, 'querystring') ??
      findUnstorableText(request.body, 'body')
    if (problem) throw new AppError('VALIDATION_ERROR', problem)
    done()
  })
}
