import { CAMPAIGN_AUDIENCE_MAX_BYTES, CAMPAIGN_AUDIENCE_MAX_ROWS } from '@dispatch/contracts'
import type { AudienceRow } from '@dispatch/db'
import { AppError } from '../../errors.ts'
import { type CsvColumns, csvColumns } from './columns.ts'
import { CsvRecords } from './csv-records.ts'
import { judgeCsvRecord, judgeNdjsonLine } from './judge-row.ts'
import { NdjsonLines } from './ndjson-lines.ts'

export interface AudienceLimits {
  maxRows: number
  maxBytes: number
}

export const AUDIENCE_LIMITS: AudienceLimits = {
  maxRows: CAMPAIGN_AUDIENCE_MAX_ROWS,
  maxBytes: CAMPAIGN_AUDIENCE_MAX_BYTES,
}

const tooManyRows = (max: number) =>
  new AppError(
    'PAYLOAD_TOO_LARGE',
    `The upload holds more than ${max.toLocaleString('en')} rows, the most an audience may`,
  )
export const tooManyBytes = (max: number) =>
  new AppError(
    'PAYLOAD_TOO_LARGE',
    `The upload is larger than ${max.toLocaleString('en')} bytes, the most an audience may be`,
  )

/**
 * An upload's rows, judged one by one as they stream in, a chunk's worth at a time: the body is
 * decoded as UTF-8 (a BOM dropped), split into CSV records or NDJSON lines, and each judged as a
 * send of it would be. Throws (and so stops the upload) for what is the file's fault, not a row's:
 * a CSV header that does not fit the template (400), more rows or bytes than an audience may hold (413).
 */
export async function* readAudience(
  body: AsyncIterable<Buffer>,
  format: 'csv' | 'ndjson',
  expected: string[] | null,
  limits: AudienceLimits = AUDIENCE_LIMITS,
): AsyncGenerator<AudienceRow[]> {
  const decoder = new TextDecoder('utf-8')
  const csv = format === 'csv' ? new CsvRecords() : undefined
  const ndjson = format === 'ndjson' ? new NdjsonLines() : undefined
  let columns: CsvColumns | undefined
  let bytes = 0
  let rows = 0
  const judge = (text: string, final: boolean): AudienceRow[] => {
    const judged: AudienceRow[] = []
    if (csv) {
      for (const record of csv.push(text, final)) {
        if (!columns) {
          columns = csvColumns(record.fields, expected)
          continue
        }
        judged.push(judgeCsvRecord(record, columns))
      }
    } else if (ndjson) {
      for (const line of ndjson.push(text, final))
        judged.push(judgeNdjsonLine(line.line, line.text, expected, line.tooLong))
    }
    rows += judged.length
    if (rows > limits.maxRows) throw tooManyRows(limits.maxRows)
    return judged
  }
  for await (const chunk of body) {
    bytes += chunk.length
    if (bytes > limits.maxBytes) throw tooManyBytes(limits.maxBytes)
    const judged = judge(decoder.decode(chunk, { stream: true }), false)
    if (judged.length > 0) yield judged
  }
  const last = judge(decoder.decode(), true)
  if (last.length > 0) yield last
  if (format === 'csv' && !columns)
    throw new AppError('VALIDATION_ERROR', 'The upload is empty: a CSV needs its header')
}
