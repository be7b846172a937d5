import { CAMPAIGN_AUDIENCE_MAX_LINE_CHARS, CAMPAIGN_AUDIENCE_RAW_CHARS } from '@dispatch/contracts'
import { detached } from './detached.ts'

/** A CSV record as read: its fields, or why it could not be read (`fields` null). */
export interface CsvRecord {
  /** Its line: records counted from 1 (blank lines counted too); a quoted newline starts none. */
  line: number
  fields: string[] | null
  problem?: string
  /** As uploaded, without its line ending. */
  raw: string
}

const QUOTE = 34
const COMMA = 44
const NEWLINE = 10
const CR = 13

const withoutCr = (text: string, from: number, to: number) =>
  to > from && text.charCodeAt(to - 1) === CR ? text.slice(from, to - 1) : text.slice(from, to)

/**
 * A streaming RFC 4180 reader: text goes in as it arrives (`push`), whole records come out. A line
 * without a quote is split at once (the common case, one `indexOf` and one `split`); one with a
 * quote is read field by field, quoted fields holding commas, doubled quotes and newlines. A quote
 * inside an unquoted field is taken as it is; text after a closing quote makes the record
 * unreadable. A record longer than CAMPAIGN_AUDIENCE_MAX_LINE_CHARS is given up as unreadable and
 * the text up to the next newline dropped unread, so memory holds one line at most.
 */
export class CsvRecords {
  #text = ''
  #line = 0
  /** Dropping a record too long, up to its next newline. */
  #skipping = false

  /** The last line counted (a reader that reads some lines itself keeps the count going through here). */
  get line(): number {
    return this.#line
  }
  set line(line: number) {
    this.#line = line
  }

  /** Nothing is held back: no record begun and not ended, no line being dropped. */
  get idle(): boolean {
    return this.#text === '' && !this.#skipping
  }

  /** The records `chunk` completes; `final` at the end of the body (a last line needs no newline). */
  push(chunk: string, final = false): CsvRecord[] {
    const records: CsvRecord[] = []
    let text = this.#text + chunk
    let pos = 0
    if (this.#skipping) {
      const nl = text.indexOf('\n')
      if (nl === -1) {
        this.#text = ''
        return records
      }
      this.#skipping = false
      pos = nl + 1
    }
    // The next quote at or after `pos` (-1: none in the text): searched again only once passed.
    let quote = text.indexOf('"', pos)
    while (pos < text.length) {
      const nl = text.indexOf('\n', pos)
      if (quote !== -1 && quote < pos) quote = text.indexOf('"', pos)
      const end = nl === -1 ? (final ? text.length : -1) : nl
      if (end !== -1 && (quote === -1 || quote >= end)) {
        const line = withoutCr(text, pos, end)
        this.#line++
        if (line.length > 0) records.push({ line: this.#line, fields: line.split(','), raw: line })
        pos = end + 1
        continue
      }
      if (end === -1 && quote === -1) break
      const read = readQuotedRecord(text, pos, final)
      if (read === undefined) break
      this.#line++
      records.push({ line: this.#line, ...read.record })
      pos = read.next
    }
    text = text.slice(pos)
    if (text.length > CAMPAIGN_AUDIENCE_MAX_LINE_CHARS) {
      this.#line++
      records.push({
        line: this.#line,
        fields: null,
        problem: `the line is longer than ${CAMPAIGN_AUDIENCE_MAX_LINE_CHARS} characters (an unclosed quote?)`,
        raw: text.slice(0, CAMPAIGN_AUDIENCE_RAW_CHARS),
      })
      const nl = text.indexOf('\n', CAMPAIGN_AUDIENCE_MAX_LINE_CHARS)
      this.#skipping = nl === -1
      text = nl === -1 ? '' : text.slice(nl + 1)
    }
    this.#text = detached(text)
    if (final && text.length > 0) return [...records, ...this.push('', true)]
    return records
  }
}

type Read = { record: Omit<CsvRecord, 'line'>; next: number }

/**
 * The record at `pos`, read field by field; undefined when the text ends inside it (more is to
 * come). `next` is where the following record starts.
 */
function readQuotedRecord(text: string, pos: number, final: boolean): Read | undefined {
  const fields: string[] = []
  let i = pos
  for (;;) {
    if (text.charCodeAt(i) === QUOTE) {
      let value = ''
      let from = i + 1
      for (;;) {
        const q = text.indexOf('"', from)
        if (q === -1)
          return final ? unreadable(text, pos, text.length, 'a quoted field is never closed') : undefined
        value += text.slice(from, q)
        if (text.charCodeAt(q + 1) === QUOTE) {
          value += '"'
          from = q + 2
          continue
        }
        if (q + 1 >= text.length && !final) return undefined
        i = q + 1
        break
      }
      fields.push(value)
      const c = text.charCodeAt(i)
      if (c === COMMA) {
        i++
        continue
      }
      if (i >= text.length) return { record: { fields, raw: text.slice(pos, i) }, next: i }
      if (c === NEWLINE) return { record: { fields, raw: text.slice(pos, i) }, next: i + 1 }
      if (c === CR && text.charCodeAt(i + 1) === NEWLINE) {
        return { record: { fields, raw: text.slice(pos, i) }, next: i + 2 }
      }
      if (c === CR && i + 1 >= text.length && !final) return undefined
      const nl = text.indexOf('\n', i)
      if (nl === -1 && !final) return undefined
      return unreadable(text, pos, nl === -1 ? text.length : nl, 'text follows a closing quote')
    }
    const comma = text.indexOf(',', i)
    const nl = text.indexOf('\n', i)
    if (nl === -1 && !final && (comma === -1 || comma > i + CAMPAIGN_AUDIENCE_MAX_LINE_CHARS))
      return undefined
    if (comma !== -1 && (nl === -1 || comma < nl)) {
      fields.push(text.slice(i, comma))
      i = comma + 1
      continue
    }
    const end = nl === -1 ? text.length : nl
    fields.push(withoutCr(text, i, end))
    return { record: { fields, raw: withoutCr(text, pos, end) }, next: end + 1 }
  }
}

function unreadable(text: string, pos: number, end: number, problem: string): Read {
  return { record: { fields: null, problem, raw: withoutCr(text, pos, end) }, next: end + 1 }
}
