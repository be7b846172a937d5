import type { CampaignRecipient } from '@dispatch/contracts'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import Type from 'typebox'
import { csvField, sendDownload } from '../http/download.ts'

const COLUMNS = ['line', 'phone', 'userId', 'state', 'reason', 'detail', 'messageId', 'errorCode'] as const

/**
 * A campaign's rows as export text, a chunk of rows to a string (one socket write per chunk): CSV
 * with a header line, or NDJSON.
 */
export async function* recipientLines(
  chunks: AsyncIterable<CampaignRecipient[]>,
  format: 'csv' | 'ndjson',
): AsyncGenerator<string> {
  if (format === 'csv') yield `${COLUMNS.join(',')}\n`
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue
    yield format === 'csv'
      ? chunk.map((row) => `${COLUMNS.map((column) => csvField(row[column])).join(',')}\n`).join('')
      : chunk.map((row) => `${JSON.stringify(row)}\n`).join('')
  }
}

/** Answers a campaign's export, as a download named after the campaign. */
export const sendExport = (
  reply: FastifyReply,
  log: FastifyBaseLogger,
  campaignId: string,
  chunks: AsyncIterable<CampaignRecipient[]>,
  format: 'csv' | 'ndjson',
) =>
  sendDownload(reply, log.child({ campaignId }), {
    text: recipientLines(chunks, format),
    type: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    filename: `campaign-${campaignId}.${format}`,
    what: 'campaign export',
  })

/** The export's answer, as the OpenAPI document describes it. */
export const EXPORT_RESPONSE = {
  description: 'The rows, as CSV (with a header) or NDJSON',
  content: {
    'text/csv': { schema: Type.String() },
    'application/x-ndjson': { schema: Type.String() },
  },
}
