import { MESSAGE_TYPES, redactPayload } from '@dispatch/contracts'
import { createDb, stripContentSql } from '@dispatch/db'
import { CONTENT_BODIES, SECRET } from '@dispatch/testing'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'

let world: TestWorld
let db: ReturnType<typeof createDb>
beforeAll(async () => {
  world = await createWorld()
  db = createDb(world.databaseUrl, { max: 2 })
})
afterAll(async () => {
  await db?.close()
  await world?.close()
})

const recipient = { phone: '+5511987654321', replyTo: 'wamid.earlier', priority: 'high' }

describe('what a message keeps of its body once its content goes', () => {
  it.each(MESSAGE_TYPES)('%s keeps its recipient and quoted message, and none of its content', (type) => {
    const body = { ...recipient, ...CONTENT_BODIES[type] }
    expect(JSON.stringify(body)).toContain(SECRET)
    const redacted = redactPayload(type, body)
    expect(JSON.stringify(redacted)).not.toContain(SECRET)
    expect(redacted).toMatchObject(recipient)
  })

  it('keeps what says which message it was: a template and language, an interactive kind, a reaction target', () => {
    expect(redactPayload('template', { userId: 'US.123', ...CONTENT_BODIES.template })).toEqual({
      userId: 'US.123',
      templateId: 'order_shipped',
      language: 'pt_BR',
    })
    expect(redactPayload('interactive', CONTENT_BODIES.interactive)).toEqual({
      interactive: { type: 'button' },
    })
    expect(redactPayload('reaction', CONTENT_BODIES.reaction)).toEqual({
      reaction: { messageId: 'wamid.quoted' },
    })
  })

  it.each(MESSAGE_TYPES)(
    '%s: an erasure in SQL keeps exactly what redaction keeps, without the recipient',
    async (type) => {
      const body = { ...recipient, userId: 'US.123', ...CONTENT_BODIES[type] }
      const [row] = await db.db.execute<{ kept: object }>(
        sql`select ${stripContentSql(sql`${type}::message_type`, sql`${JSON.stringify(body)}::jsonb`)} as kept`,
      )
      const expected = redactPayload(type, body, { recipient: false })
      expect(row?.kept).toEqual(expected)
      expect(JSON.stringify(row?.kept)).not.toMatch(/secret-words|5511987654321|US\.123/)
      expect(expected).toMatchObject({ replyTo: 'wamid.earlier', priority: 'high' })
    },
  )
})
