import { isUtf8 } from 'node:buffer'
import { CAMPAIGN_AUDIENCE_MAX_LINE_CHARS } from '@dispatch/contracts'
import { type AudienceBatch, type AudienceRow, PlainRows } from '@dispatch/db'
import { type CsvColumns, csvColumns, VARIABLE_MAX_CHARS } from './columns.ts'
import { CsvRecords } from './csv-records.ts'
import { judgeCsvRecord } from './judge-row.ts'

const NEWLINE = 10
const CR = 13
const SPACE = 32
const QUOTE = 34
const PLUS = 43
const COMMA = 44
const ZERO = 48
const ONE = 49
const NINE = 57
const BACKSLASH = 92
const HIGH = 0x80

/** Where a plain line's parts are among its fields. */
interface Plan {
  count: number
  phone: number
  userId: number
  /** The variables' fields, in the order of `names`. */
  variables: Int32Array
  /** The variables' names in the order a JSON object of them takes (integer-like names first). */
  names: string[]
  /** What each field is: `phone`, a variable's name, or '' (userId, clientReference: not kept). */
  fields: string[]
}

function planOf(columns: CsvColumns): Plan | undefined {
  if (columns.phone === -1) return undefined
  const at: Record<string, number> = {}
  for (const { name, at: field } of columns.variables) at[name] = field
  const names = Object.keys(at)
  const fields = Array.from({ length: columns.count }, () => '')
  fields[columns.phone] = 'phone'
  for (const { name, at: field } of columns.variables) fields[field] = name
  return {
    fields,
    count: columns.count,
    phone: columns.phone,
    userId: columns.userId,
    variables: Int32Array.from(names, (name) => at[name] as number),
    names,
  }
}

/**
 * A CSV audience read from its bytes, a chunk at a time, each row judged as a send of it would be.
 * A plain line (no quote; no control character, backslash or invalid UTF-8; as many fields as the
 * header; a valid E.164 phone, no userId; every variable given and short enough) is taken straight
 * from the bytes into `PlainRows`: no string or object is made for it. Every other line is read
 * and judged as before, as text (`CsvRecords`, `judgeCsvRecord`): a line without a quote on its
 * own, and from a line with a quote to the end of the chunk (a quoted field may hold newlines) by
 * the streaming reader, until it holds no record begun. The header is read as text too.
 */
export class CsvAudience {
  readonly #expected: string[] | null
  #columns: CsvColumns | undefined
  #plan: Plan | undefined
  readonly #records = new CsvRecords()
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true })
  readonly #lineDecoder = new TextDecoder('utf-8', { ignoreBOM: true })
  /** The bytes of a line not yet ended (a copy: the chunk it came in is not held). */
  #rest: Buffer | undefined
  #started = false
  #line = 0
  /** The text reader holds a record begun: what follows is its until it ends. */
  #inRecord = false
  #fieldEnds = new Int32Array(1)
  /** The rows read so far (the header aside). */
  rows = 0
  /**
   * The PlainRows of the chunk being read, reused chunk after chunk: a batch is written to COPY
   * before the next chunk is read, so its arrays are free again by then.
   */
  readonly #pool: PlainRows[] = []
  #pooled = 0

  constructor(expected: string[] | null) {
    this.#expected = expected
  }

  get hasHeader(): boolean {
    return this.#columns !== undefined
  }

  /**
   * The rows `chunk` completes, judged, in line order; `final` at the end of the body. The batch
   * answered holds until the next push (its PlainRows are reused).
   */
  push(chunk: Buffer, final = false): AudienceBatch {
    this.#pooled = 0
    const rest = this.#rest
    if (rest && this.#started) {
      // The line begun in the last chunk ends in this one: read it alone, not the chunk copied whole.
      const nl = chunk.indexOf(NEWLINE)
      if (nl !== -1) {
        this.#rest = undefined
        const out = this.#read(Buffer.concat([rest, chunk.subarray(0, nl + 1)]), false)
        for (const part of this.#read(chunk.subarray(nl + 1), final)) out.push(part)
        return out
      }
    }
    let buf = rest ? Buffer.concat([rest, chunk]) : chunk
    this.#rest = undefined
    if (!this.#started) {
      if (buf.length < 3 && !final) {
        this.#rest = Buffer.from(buf)
        return []
      }
      this.#started = true
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3)
    }
    return this.#read(buf, final)
  }

  #read(buf: Buffer, final: boolean): AudienceBatch {
    const out: AudienceBatch = []
    let end = final ? buf.length : buf.lastIndexOf(NEWLINE) + 1
    // No line ends in more than the longest line: the text reader gives it up.
    const tooLong = end === 0 && buf.length > CAMPAIGN_AUDIENCE_MAX_LINE_CHARS
    if (tooLong) end = buf.length
    let pos = 0
    while (pos < end) {
      if (!this.#columns && !this.#inRecord) {
        const nl = buf.indexOf(NEWLINE, pos)
        const to = nl !== -1 && nl < end ? nl + 1 : end
        this.#text(buf, pos, to, final && to === buf.length, out)
        pos = to
      } else if (this.#inRecord || !this.#plan || tooLong) {
        this.#text(buf, pos, end, final && end === buf.length, out)
        pos = end
      } else {
        pos = this.#plain(buf, pos, end, out)
        if (pos < end) {
          this.#text(buf, pos, end, final && end === buf.length, out)
          pos = end
        }
      }
    }
    if (end < buf.length) this.#rest = Buffer.from(buf.subarray(end))
    if (final && this.#inRecord) this.#text(buf, end, end, true, out)
    return out
  }

  /** Bytes read as text by the streaming reader (the header, a quoted record and what follows it). */
  #text(buf: Buffer, from: number, to: number, final: boolean, out: AudienceBatch) {
    this.#records.line = this.#line
    const text = this.#decoder.decode(buf.subarray(from, to), { stream: !final })
    for (const record of this.#records.push(text, final)) {
      if (!this.#columns) {
        this.#columns = csvColumns(record.fields, this.#expected)
        this.#plan = planOf(this.#columns)
        this.#fieldEnds = new Int32Array(this.#columns.count)
        continue
      }
      this.#judged(judgeCsvRecord(record, this.#columns), out)
    }
    this.#line = this.#records.line
    this.#inRecord = !this.#records.idle
  }

  #judged(row: AudienceRow, out: AudienceBatch) {
    this.rows++
    out.push(row)
  }

  /** A line without a quote that is not plain, read as text on its own. */
  #lineAsText(buf: Buffer, from: number, to: number, out: AudienceBatch) {
    const raw = this.#lineDecoder.decode(buf.subarray(from, to))
    this.#judged(
      judgeCsvRecord({ line: this.#line, fields: raw.split(','), raw }, this.#columns as CsvColumns),
      out,
    )
  }

  /**
   * The lines of `buf` from `from` (a line's start) to `end` (just after a newline, or the body's
   * end), plain ones into PlainRows; answers where it stopped: `end`, or the start of a line with a
   * quote, left to the text reader.
   */
  #plain(buf: Buffer, from: number, end: number, out: AudienceBatch): number {
    const plan = this.#plan as Plan
    const { count, phone, userId, variables } = plan
    const ends = this.#fieldEnds
    let rows: PlainRows | undefined
    let utf8: boolean | undefined
    let pos = from
    while (pos < end) {
      let fields = 0
      let odd = false
      let high = false
      let i = pos
      let textEnd = -1
      for (; i < end; i++) {
        const c = buf[i] as number
        if (c === NEWLINE) break
        if (c === COMMA) {
          if (fields < count) ends[fields] = i
          fields++
        } else if (c === QUOTE) {
          return pos
        } else if (c < SPACE) {
          if (c === CR && (i + 1 === end || buf[i + 1] === NEWLINE)) textEnd = i
          else odd = true
        } else if (c === BACKSLASH) odd = true
        else if (c >= HIGH) high = true
      }
      if (textEnd === -1) textEnd = i
      const next = i + 1
      this.#line++
      if (textEnd === pos) {
        pos = next
        continue
      }
      if (high && utf8 === undefined) utf8 = isUtf8(buf.subarray(from, end))
      if (odd || fields + 1 !== count || (high && !utf8)) {
        rows = undefined
        this.#lineAsText(buf, pos, textEnd, out)
        pos = next
        continue
      }
      ends[count - 1] = textEnd
      // The phone, trimmed: +, a digit 1-9, 7 to 14 more digits; its digits are its key.
      let ps = phone === 0 ? pos : (ends[phone - 1] as number) + 1
      let pe = ends[phone] as number
      while (ps < pe && buf[ps] === SPACE) ps++
      while (pe > ps && buf[pe - 1] === SPACE) pe--
      let key = -1
      if (pe - ps >= 9 && pe - ps <= 16 && buf[ps] === PLUS && (buf[ps + 1] as number) >= ONE) {
        key = 0
        for (let d = ps + 1; d < pe; d++) {
          const c = buf[d] as number
          if (c < ZERO || c > NINE) {
            key = -1
            break
          }
          key = key * 10 + c - ZERO
        }
      }
      let plain = key !== -1
      if (plain && userId !== -1) {
        for (let u = userId === 0 ? pos : (ends[userId - 1] as number) + 1; u < (ends[userId] as number); u++)
          if (buf[u] !== SPACE) plain = false
      }
      // Each variable given (something besides spaces), and no longer than a send takes.
      for (let v = 0; plain && v < variables.length; v++) {
        const field = variables[v] as number
        const vs = field === 0 ? pos : (ends[field - 1] as number) + 1
        const ve = ends[field] as number
        if (ve - vs > VARIABLE_MAX_CHARS) plain = false
        else {
          let given = false
          for (let b = vs; b < ve && !given; b++) given = buf[b] !== SPACE && (buf[b] as number) < HIGH
          plain = given
        }
      }
      if (!plain) {
        rows = undefined
        this.#lineAsText(buf, pos, textEnd, out)
        pos = next
        continue
      }
      if (!rows) {
        rows = this.#pool[this.#pooled]
        if (rows) rows.reset(buf)
        else {
          rows = new PlainRows(buf, plan.names, Math.max(64, (end - pos) >> 5), plan.fields)
          this.#pool.push(rows)
        }
        this.#pooled++
        out.push(rows)
      }
      const at = rows.add(this.#line, key)
      const spans = rows.spans
      spans[at] = pos
      spans[at + 1] = textEnd
      spans[at + 2] = ps
      spans[at + 3] = pe
      for (let v = 0; v < variables.length; v++) {
        const field = variables[v] as number
        spans[at + 4 + 2 * v] = field === 0 ? pos : (ends[field - 1] as number) + 1
        spans[at + 5 + 2 * v] = ends[field] as number
      }
      this.rows++
      pos = next
    }
    return end
  }
}
