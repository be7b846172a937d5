import type { CampaignSkipReason } from '@dispatch/contracts'

/** One row of an upload as read: taken so far (`reason` null), or skipped as read. */
export interface AudienceRow {
  line: number
  phone: string | null
  userId: string | null
  /** The template's body variables; null for a row skipped as read. */
  variables: Record<string, string> | null
  reason: CampaignSkipReason | null
  detail: string | null
  /** The line as uploaded. */
  raw: string
}

/**
 * Rows of a CSV upload taken as read, kept as the bytes they came in: each a plain line (no quote,
 * nothing JSON or COPY would escape, a valid E.164 phone, every variable given) whose line number,
 * phone and variables are spans of `source`. A million of them make no string or object apiece:
 * the rows go from the body's bytes to COPY's bytes (`copyAudience`) with nothing for the collector
 * to walk.
 */
export class PlainRows {
  /** The rows' line numbers. */
  lines: Int32Array
  /** Each row's phone as its key for the duplicates (its digits as a number, `SeenRecipients`). */
  keys: Float64Array
  /**
   * Each row's spans in `source`, `stride` numbers a row: the line's start and end (its raw line,
   * without its line ending), the phone's start and end (trimmed), then each variable's start and
   * end, in the order of `names`.
   */
  spans: Int32Array
  readonly stride: number
  count = 0

  /** The bytes the spans point into (the body's chunk). */
  source: Buffer
  /** The variables' names, in the order a JSON object of them takes (`Object.keys`). */
  readonly names: readonly string[]
  /**
   * What each field of a line is, in the line's order: `phone`, a variable's name, or '' (a
   * field not kept: a blank userId, clientReference). A block of these lines keeps it to be read.
   */
  readonly fields: readonly string[]

  constructor(source: Buffer, names: readonly string[], capacity = 256, fields = ['phone', ...names]) {
    this.source = source
    this.names = names
    this.fields = fields
    this.stride = 4 + 2 * names.length
    this.lines = new Int32Array(capacity)
    this.keys = new Float64Array(capacity)
    this.spans = new Int32Array(capacity * this.stride)
  }

  /** Emptied for the rows of another chunk, its arrays kept (a reader reuses them chunk after chunk). */
  reset(source: Buffer) {
    this.source = source
    this.count = 0
  }

  /** Room for one more row; answers where its spans start. */
  add(line: number, key: number): number {
    if (this.count === this.lines.length) this.#grow()
    this.lines[this.count] = line
    this.keys[this.count] = key
    return this.count++ * this.stride
  }

  /** The rows as objects, as a row read as text is (for a reader that wants objects: tests, tools). */
  toRows(): AudienceRow[] {
    const rows: AudienceRow[] = []
    const text = (from: number, to: number) => this.source.toString('utf8', from, to)
    for (let i = 0, at = 0; i < this.count; i++, at += this.stride) {
      const span = (k: number) => this.spans[at + k] as number
      const variables: Record<string, string> = {}
      this.names.forEach((name, v) => {
        variables[name] = text(span(4 + 2 * v), span(5 + 2 * v))
      })
      rows.push({
        line: this.lines[i] as number,
        phone: text(span(2), span(3)),
        userId: null,
        variables,
        reason: null,
        detail: null,
        raw: text(span(0), span(1)),
      })
    }
    return rows
  }

  #grow() {
    const lines = new Int32Array(this.lines.length * 2)
    lines.set(this.lines)
    const keys = new Float64Array(this.keys.length * 2)
    keys.set(this.keys)
    const spans = new Int32Array(this.spans.length * 2)
    spans.set(this.spans)
    this.lines = lines
    this.keys = keys
    this.spans = spans
  }
}
