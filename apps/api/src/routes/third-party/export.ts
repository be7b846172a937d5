import { Readable } from 'node:stream'
import { Phone, Scopes } from '@dispatch/contracts'
import { type ExportPage, identitiesOf, owned } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { toSuppressionView } from '../../consent/views.ts'
import { pooledCallerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { toInboundMessageView, toMessageView } from '../../views.ts'

/** Rows per query: one page is what the stream holds at most, however much the recipient has. */
export const EXPORT_PAGE_SIZE = 1000

const ExportParams = Type.Object({ phone: Phone })

/** One NDJSON line per record, each with its `kind`, as the key's own views show it. */
function toLines(page: ExportPage): Array<Record<string, unknown>> {
  switch (page.kind) {
    case 'message':
      // The view, and what was sent as it was accepted (`{}` once its content was removed).
      return page.rows.map((row) => ({ kind: page.kind, ...toMessageView(row), payload: row.payload }))
    case 'inbound_message':
      return page.rows.map((row) => ({ kind: page.kind, ...toInboundMessageView(row) }))
    case 'event':
      return page.rows.map((row) => ({
        kind: page.kind,
        id: row.id,
        type: row.type,
        messageId: row.messageId,
        sequence: row.sequence,
        createdAt: row.createdAt.toISOString(),
        ...(row.payload as { data?: unknown }),
      }))
    case 'suppression':
      return page.rows.map((row) => ({ kind: page.kind, ...toSuppressionView(row) }))
  }
}

/**
 * `GET /api/third-party/recipients/:phone/export`: everything Dispatch holds about one recipient
 * for the key, as NDJSON. Read a page (`EXPORT_PAGE_SIZE` rows, keyset) at a time and written a page
 * at a time through a Readable that pulls the next page only when the socket has taken the last: a
 * slow reader holds the query, never the recipient's whole history in the server's memory.
 * Scope `manage:data`, as erasure: an export holds every text a recipient was sent or sent back,
 * more than `read:messages` (given to integrations that follow statuses) should reach in bulk.
 */
export const recipientExportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config } = app.deps
  const hash = recipientHasher(config)

  app.get(
    '/recipients/:phone/export',
    {
      config: { scope: Scopes.manageData },
      schema: {
        operationId: 'exportRecipient',
        tags: ['data'],
        summary: 'Everything held about a recipient for your key (NDJSON)',
        description:
          'Requires `manage:data`. One JSON object per line, each with its `kind`: `message`, ' +
          '`inbound_message`, `event` (webhook events about them), `suppression` (the entries that block your ' +
          'sends to them: their own opt-outs of your sender, and your tenant’s, on every number of your sender pool ' +
          'for a pooled key; never another tenant’s). Streamed as it is read; the phone in E.164 (`%2B` for the `+`).',
        params: ExportParams,
        response: {
          200: {
            description: 'One JSON object per line',
            content: { 'application/x-ndjson': { schema: Type.String() } },
          },
          ...errorResponses('VALIDATION_ERROR'),
        },
      },
    },
    async (request, reply) => {
      const { phone } = request.params
      const key = request.apiKey
      const identities = await identitiesOf(db, { phone })
      const pages = owned(db, pooledCallerOf(request, app.sending.pools)).exportPages({
        identities,
        hashes: [...identities.phones, ...identities.userIds].map(hash),
        pageSize: EXPORT_PAGE_SIZE,
      })
      // A page's lines as one chunk: one socket write per page, not per line (100,000 writes of a
      // line each took ten times as long as the queries).
      async function* chunks() {
        for await (const page of pages) {
          yield toLines(page)
            .map((line) => `${JSON.stringify(line)}\n`)
            .join('')
        }
      }
      // Past 64 KiB waiting for the socket, the next page is not read: at most a page or two in memory.
      const stream = Readable.from(chunks(), { objectMode: false, highWaterMark: 64 * 1024 })
      stream.on('error', (error) => request.log.error({ err: error }, 'recipient export cut short'))
      request.log.info({ apiKeyId: key.id }, 'recipient export started')
      return reply.type('application/x-ndjson').send(stream as never)
    },
  )
}
