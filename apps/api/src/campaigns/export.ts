import { Readable } from 'node:stream'
import type { CampaignRecipient } from '@dispatch/contracts'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import Type from 'typebox'

const COLUMNS = ['line', 'phone', 'userId', 'state', 'reason', 'detail', 'messageId', 'errorCode'] as const

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; a formula's lead char defused. */
export function csvField(value: string | number | null): string {
  if (value === null) return ''
  let text = String(value)
  // A cell starting =, @, or + or - before anything but digits, is a formula to a spreadsheet: a
  // leading quote keeps it text. A phone (`+5511…`) stays as it is.
  if (typeof value === 'string' && (/^[=@\t\r]/.test(text) || /^[+-](?![0-9]+$)/.test(text)))
    text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

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

/**
 * Answers a campaign's export: its rows read a chunk at a time as the socket takes them (past
 * 64 KiB waiting, the next chunk is not read), as a download named after the campaign.
 */
export function sendExport(
  reply: FastifyReply,
  log: FastifyBaseLogger,
  campaignId: string,
  chunks: AsyncIterable<CampaignRecipient[]>,
  format: 'csv' | 'ndjson',
) {
  const stream = Readable.from(recipientLines(chunks, format), {
    objectMode: false,
    highWaterMark: 64 * 1024,
  })
  stream.on('error', (error) => log.error({ err: error, campaignId }, 'campaign export cut short'))
  return reply
    .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
    .header('content-disposition', `attachment; filename="campaign-${campaignId}.${format}"`)
    .send(stream as never)
}

/** The export's answer, as the OpenAPI document describes it. */
export const EXPORT_RESPONSE = {
  description: 'The rows, as CSV (with a header) or NDJSON',
  content: {
    'text/csv': { schema: Type.String() },
    'application/x-ndjson': { schema: Type.String() },
  },
}
