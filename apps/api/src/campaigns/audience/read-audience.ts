import { CAMPAIGN_AUDIENCE_MAX_BYTES, CAMPAIGN_AUDIENCE_MAX_ROWS } from '@dispatch/contracts'
import type { AudienceBatch, AudienceRow } from '@dispatch/db'
import { AppError } from '../../errors.ts'
import { CsvAudience } from './csv-audience.ts'
import { judgeNdjsonLine } from './judge-row.ts'
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
 * An upload's rows, judged one by one as they stream in, a chunk's worth at a time: a CSV read from
 * its bytes (`CsvAudience`: a BOM dropped, plain lines kept as bytes), NDJSON decoded as UTF-8 and
 * split into lines; each row judged as a send of it would be. A batch holds until the next one is
 * asked for (a CSV's plain rows reuse their arrays). Throws (and so stops the upload) for
 * what is the file's fault, not a row's: a CSV header that does not fit the template (400), more
 * rows or bytes than an audience may hold (413).
 */
export async function* readAudience(
  body: AsyncIterable<Buffer>,
  format: 'csv' | 'ndjson',
  expected: string[] | null,
  limits: AudienceLimits = AUDIENCE_LIMITS,
): AsyncGenerator<AudienceBatch> {
  const decoder = new TextDecoder('utf-8')
  const csv = format === 'csv' ? new CsvAudience(expected) : undefined
  const ndjson = format === 'ndjson' ? new NdjsonLines() : undefined
  let bytes = 0
  let rows = 0
  const judge = (chunk: Buffer, final: boolean): AudienceBatch => {
    let judged: AudienceBatch
    if (csv) {
      judged = csv.push(chunk, final)
      rows = csv.rows
    } else {
      const lines: AudienceRow[] = []
      for (const line of (ndjson as NdjsonLines).push(decoder.decode(chunk, { stream: !final }), final))
        lines.push(judgeNdjsonLine(line.line, line.text, expected, line.tooLong))
      rows += lines.length
      judged = lines
    }
    if (rows > limits.maxRows) throw tooManyRows(limits.maxRows)
    return judged
  }
  for await (const chunk of body) {
    bytes += chunk.length
    if (bytes > limits.maxBytes) throw tooManyBytes(limits.maxBytes)
    const judged = judge(chunk, false)
    if (judged.length > 0) yield judged
  }
  const last = judge(Buffer.alloc(0), true)
  if (last.length > 0) yield last
  if (csv && !csv.hasHeader)
    throw new AppError('VALIDATION_ERROR', 'The upload is empty: a CSV needs its header')
}
