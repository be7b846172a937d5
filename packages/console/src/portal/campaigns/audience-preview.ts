/**
 * The first rows of an audience file, read in the browser before and after its upload, and the
 * template's body with each row's variables filled in. The API keeps a recipient's variables for
 * its send but does not answer them back, so the preview reads them from the file the person chose.
 */

export type AudienceFormat = 'csv' | 'ndjson'

export interface PreviewRow {
  /** The row's line as the API counts it (a CSV's header is line 1). */
  line: number
  recipient: string
  variables: Record<string, string>
  /** What the browser could not read on this line (the API will skip it too). */
  problem?: string
}

/** How much of the file the preview reads: enough for its first rows, never the whole file. */
export const PREVIEW_BYTES = 64 * 1024

/** The columns that are not template variables (as the API matches them: without regard to case). */
const RESERVED = new Set(['phone', 'userid', 'clientreference'])

export const formatOf = (file: { name: string; type: string }): AudienceFormat =>
  file.type === 'application/x-ndjson' || /\.(nd)?jsonl?$/i.test(file.name) ? 'ndjson' : 'csv'

/** CSV records (RFC 4180: quoted fields, doubled quotes, CRLF or LF); `partial`: drop the last, cut off. */
export function csvRecords(text: string, partial = false): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"' && field === '') quoted = true
    else if (c === ',') {
      record.push(field)
      field = ''
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++
      record.push(field)
      records.push(record)
      record = []
      field = ''
    } else field += c
  }
  if (!partial && (field !== '' || record.length > 0)) records.push([...record, field])
  return records.filter((r) => !(r.length === 1 && r[0] === ''))
}

function csvRows(text: string, partial: boolean, max: number): PreviewRow[] {
  const [header, ...records] = csvRecords(text, partial)
  if (!header) return []
  const names = header.map((name) => name.trim())
  return records.slice(0, max).map((fields, index) => {
    const row: PreviewRow = { line: index + 2, recipient: '', variables: {} }
    if (fields.length !== names.length)
      row.problem = `${fields.length} fields; the header has ${names.length}`
    for (const [at, name] of names.entries()) {
      const value = fields[at] ?? ''
      const lower = name.toLowerCase()
      if (lower === 'phone' || lower === 'userid') row.recipient ||= value
      else if (!RESERVED.has(lower)) row.variables[name] = value
    }
    return row
  })
}

function ndjsonRows(text: string, partial: boolean, max: number): PreviewRow[] {
  const lines = text.split(/\r?\n/)
  if (partial) lines.pop()
  const rows: PreviewRow[] = []
  for (const [index, line] of lines.entries()) {
    if (rows.length >= max) break
    if (line.trim() === '') continue
    const row: PreviewRow = { line: index + 1, recipient: '', variables: {} }
    try {
      const value = JSON.parse(line) as { phone?: unknown; userId?: unknown; variables?: unknown }
      row.recipient = String(value.phone ?? value.userId ?? '')
      if (value.variables && typeof value.variables === 'object') {
        for (const [name, v] of Object.entries(value.variables)) row.variables[name] = String(v)
      }
    } catch {
      row.problem = 'not a JSON object'
    }
    rows.push(row)
  }
  return rows
}

/** The first `max` rows of `text`, the file's first bytes (`partial`: the file goes on past them). */
export const previewRows = (text: string, format: AudienceFormat, partial: boolean, max = 5) =>
  format === 'csv' ? csvRows(text, partial, max) : ndjsonRows(text, partial, max)

/** Reads the file's first bytes only, however large it is. */
export async function readPreview(file: Blob & { name: string }, max = 5) {
  const format = formatOf({ name: file.name, type: file.type })
  const text = await file.slice(0, PREVIEW_BYTES).text()
  return { format, rows: previewRows(text, format, file.size > PREVIEW_BYTES, max) }
}

export { type BodyPart, bodyText, renderBody } from '../../ui/template-text.ts'
