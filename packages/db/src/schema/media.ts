import { customType, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'

const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' })

/**
 * Files a sender uploaded to send as images. With the Cloud API the file goes to the platform and
 * only its platform id is kept; with the sandbox the bytes are kept here.
 */
export const media = pgTable(
  'media',
  {
    /** The `mediaId` a send uses: the platform's id, or ours (a uuid) with the sandbox. */
    id: text().primaryKey(),
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    mimeType: text().notNull(),
    size: integer().notNull(),
    sha256: text().notNull(),
    /** The file itself, with the sandbox only. */
    data: bytea(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('media_api_key_id_created_at_idx').on(t.apiKeyId, t.createdAt)],
)

export type MediaRow = typeof media.$inferSelect
