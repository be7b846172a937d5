import { type SQL, sql } from 'drizzle-orm'

/**
 * What a message's payload keeps once its content is removed (by content retention or an erasure):
 * how it was sent, never what it said or to whom. Everything else goes: the recipient, texts,
 * template variables, captions, media ids, locations, contacts, buttons, replies' content.
 */
export const KEPT_PAYLOAD_FIELDS = ['templateId', 'language', 'category', 'priority'] as const

/**
 * A payload (a message's request body, or an inbound message's normalized content) without its
 * content: only `KEPT_PAYLOAD_FIELDS` stay. The one definition of "strip the content", in TypeScript
 * and, for statements over many rows, in SQL (`stripContentSql`).
 */
export function stripContent(payload: unknown): Record<string, unknown> {
  if (typeof payload !== 'object' || payload === null) return {}
  const kept: Record<string, unknown> = {}
  for (const field of KEPT_PAYLOAD_FIELDS) {
    const value = (payload as Record<string, unknown>)[field]
    if (value !== undefined) kept[field] = value
  }
  return kept
}

/** `stripContent` of a jsonb column, in SQL. */
export const stripContentSql = (column: SQL | SQL.Aliased | unknown): SQL =>
  sql`coalesce((select jsonb_object_agg(f.key, f.value) from jsonb_each(${column}) f
    where f.key in (${sql.join(
      KEPT_PAYLOAD_FIELDS.map((field) => sql`${field}`),
      sql`, `,
    )})), '{}'::jsonb)`
