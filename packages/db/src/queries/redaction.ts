import { type BodyPath, KEPT_FIELDS, MESSAGE_TYPES } from '@dispatch/contracts'
import { type SQL, sql } from 'drizzle-orm'

/** A field name as a SQL literal (the names are the contract's constants, never input). */
const literal = (name: string) => sql.raw(`'${name.replaceAll("'", "''")}'`)

/** `{field: …}` or `{field: {inner: …}}` of `payload` when it has that field, else `{}`. */
const keep = (payload: SQL, [field, inner]: BodyPath): SQL => {
  const value = sql`(${payload} -> ${literal(field)})`
  if (inner === undefined) {
    return sql`case when ${value} is not null then jsonb_build_object(${literal(field)}, ${value}) else '{}'::jsonb end`
  }
  const innerValue = sql`(case when jsonb_typeof(${value}) = 'object' then ${value} -> ${literal(inner)} end)`
  return sql`case when ${innerValue} is not null
    then jsonb_build_object(${literal(field)}, jsonb_build_object(${literal(inner)}, ${innerValue})) else '{}'::jsonb end`
}

const merged = (parts: SQL[]) => sql.join([sql`'{}'::jsonb`, ...parts], sql` || `)

/**
 * A message's payload without its content and without its recipient, in SQL, for statements over
 * many rows (an erasure): what `redactPayload(type, payload, { recipient: false })` answers, built
 * from the same allow-list (`KEPT_FIELDS` in packages/contracts).
 */
export function stripContentSql(type: unknown, payload: unknown): SQL {
  const body = sql`${payload}`
  const byType = MESSAGE_TYPES.filter((t) => KEPT_FIELDS[t].length > 0).map(
    (t) => sql`when ${literal(t)} then ${merged(KEPT_FIELDS[t].map((path) => keep(body, path)))}`,
  )
  return merged([
    ...KEPT_FIELDS.all.map((path) => keep(body, path)),
    sql`(case ${type}::text ${sql.join(byType, sql` `)} else '{}'::jsonb end)`,
  ])
}
