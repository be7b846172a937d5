import { Readable } from 'node:stream'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'

/**
 * A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. A cell starting
 * =, @, a tab or a carriage return, or + or - before anything but digits, is a formula to a
 * spreadsheet: a leading quote keeps it text. A phone (`+5511…`) stays as it is. `asWritten`: no
 * quote added (a line as uploaded, kept to be fixed and uploaded again).
 */
export function csvField(value: string | number | null, asWritten = false): string {
  if (value === null) return ''
  let text = String(value)
  if (!asWritten && typeof value === 'string' && (/^[=@\t\r]/.test(text) || /^[+-](?![0-9]+$)/.test(text)))
    text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/**
 * Answers with a download streamed as the socket takes it: each chunk of `text` is one socket
 * write, and past 64 KiB waiting the next chunk is not read (a page or two in memory, however long
 * the download). A failure midway cuts the download short and is logged as `what`.
 */
export function sendDownload(
  reply: FastifyReply,
  log: FastifyBaseLogger,
  download: { text: AsyncIterable<string>; type: string; filename: string; what: string },
) {
  const stream = Readable.from(download.text, { objectMode: false, highWaterMark: 64 * 1024 })
  stream.on('error', (error) => log.error({ err: error }, `${download.what} cut short`))
  return reply
    .type(download.type)
    .header('content-disposition', `attachment; filename="${download.filename}"`)
    .send(stream as never)
}
