import { UUID_PATTERN } from '@dispatch/contracts'
import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'

/**
 * Bodies are validated strictly: unknown properties and wrong types are errors, never stripped or
 * coerced. Query strings, params and headers arrive as text, so they are coerced (and single values
 * become arrays where an array is expected).
 */
/** An Ajv as the routes use it: `false` for bodies (strict), `'array'` for text parts. */
export function makeAjv(coerceTypes: boolean | 'array') {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
    // A `oneOf` told apart by a property (`interactive.type`) reports the mistake from the right branch.
    discriminator: true,
  })
  addFormats.default(ajv)
  // ajv-formats' `uuid` also takes `urn:uuid:…`, which Postgres refuses (a 500): ours is the one
  // form Dispatch gives out (@dispatch/contracts ids.ts).
  ajv.addFormat('uuid', new RegExp(UUID_PATTERN))
  return ajv
}

export function installValidation(app: FastifyInstance) {
  const strict = makeAjv(false)
  const coercing = makeAjv('array')
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema as object)
  app.setValidatorCompiler(compiler)
}

/** A one-line message naming the field: `body.email must match format "email"`. */
export function describeValidationError(context: string | undefined, error: ErrorObject | undefined): string {
  const where = context ?? 'request'
  if (!error) return `Invalid ${where}`
  const path = error.instancePath
    .split('/')
    .filter(Boolean)
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : `${acc}.${part}`), where)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `${path} has unknown property "${String(params.additionalProperty)}"`
    case 'required':
      return `${path}.${String(params.missingProperty)} is required`
    case 'enum':
      return `${path} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    default:
      return `${path} ${error.message ?? 'is invalid'}`
  }
}
