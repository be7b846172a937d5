import { csvField } from '../../http/download.ts'

/** One skipped row as the report reads it. */
export interface SkippedRow {
  line: number
  reason: string | null
  detail: string | null
  raw: string | null
}

/** Rows read per query: the report holds one chunk at a time, however many lines were skipped. */
export const SKIPPED_REPORT_CHUNK = 5000

/**
 * The skipped lines' report as CSV text, a chunk of rows a yield (one socket write each), read in
 * line order through `read(after, take)` (keyset on the line).
 */
export async function* skippedReport(
  read: (after: number, take: number) => Promise<SkippedRow[]>,
  take = SKIPPED_REPORT_CHUNK,
): AsyncGenerator<string> {
  yield 'line,reason,detail,raw\r\n'
  let after = 0
  for (;;) {
    const rows = await read(after, take)
    if (rows.length === 0) return
    yield rows
      .map((r) => `${r.line},${csvField(r.reason)},${csvField(r.detail)},${csvField(r.raw, true)}\r\n`)
      .join('')
    after = (rows[rows.length - 1] as SkippedRow).line
    if (rows.length < take) return
  }
}
