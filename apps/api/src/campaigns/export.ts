import type { CampaignRecipient } from '@dispatch/contracts'

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
