import type { preValidationHookHandler } from 'fastify'
import { COMMA_LISTS } from '../plugins/openapi-describe.ts'

/**
 * Array parameters accept `a=1&a=2` and `a=1,2` alike: commas are split before validation. The hook
 * names its parameters (`COMMA_LISTS`), so the OpenAPI document describes them as comma lists.
 */
export const splitCommaLists = (...names: string[]): preValidationHookHandler => {
  const split: preValidationHookHandler = async (request) => {
    const query = request.query as Record<string, unknown>
    for (const name of names) {
      const value = query[name]
      if (value === undefined) continue
      query[name] = (Array.isArray(value) ? value : [value])
        .flatMap((v) => String(v).split(','))
        .filter(Boolean)
    }
  }
  return Object.assign(split, { [COMMA_LISTS]: names })
}
