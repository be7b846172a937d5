import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { CAMPAIGN_AUDIENCE_RAW_CHARS, type CampaignSkipReason } from '@dispatch/contracts'
import type { TransactionSql } from 'postgres'
import { type AudienceConsent, optOutDetail } from './campaign-audience-judge.ts'
import { type AudienceRow, PlainRows } from './campaign-audience-plain.ts'
import type { SeenRecipients } from './campaign-audience-seen.ts'

export type { AudienceRow } from './campaign-audience-plain.ts'

const cut = (raw: string) =>
  raw.length <= CAMPAIGN_AUDIENCE_RAW_CHARS ? raw : raw.slice(0, CAMPAIGN_AUDIENCE_RAW_CHARS).toWellFormed()

/** What an upload's rows come as, a chunk of the body at a time: rows judged one by one, and plain rows as bytes. */
export type AudienceBatch = Array<AudienceRow | PlainRows>

/** COPY's binary format: its signature, no flags, no header extension. */
const COPY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
const COPY_TRAILER = Buffer.from([0xff, 0xff])
/**
 * Each row's fields: campaign_id, line, phone, user_id, variables, state, reason, detail, raw,
 * lines, block, block_fields (the last three null but for a block).
 */
const FIELDS = 12
const PENDING = Buffer.from('pending')
const SKIPPED = Buffer.from('skipped')
/** Three fields null; a row's last three when it is no block (lines, block, block_fields). */
const NULLS_3 = Buffer.alloc(12, 0xff)
const NO_BLOCK = NULLS_3
/**
 * The most bytes of lines a block holds: its row stays under the size past which Postgres would
 * compress it and move it out of line (TOAST, about 2 kB a row), less what its other fields take.
 */
const BLOCK_ROW_BYTES = 1900
const BLOCK_MIN_BYTES = 256

/**
 * A batch's rows in COPY's binary format, written into one growing buffer: no text to escape, a
 * uuid as its 16 bytes, a plain row's phone and values copied from the body's bytes.
 */
class BinaryRows {
  buffer = Buffer.allocUnsafe(1 << 16)
  at = 0

  room(n: number) {
    if (this.at + n <= this.buffer.length) return
    const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + n))
    this.buffer.copy(bigger, 0, 0, this.at)
    this.buffer = bigger
  }
  int16(n: number) {
    this.room(2)
    this.at = this.buffer.writeInt16BE(n, this.at)
  }
  int32(n: number) {
    this.room(4)
    this.at = this.buffer.writeInt32BE(n, this.at)
  }
  null() {
    this.int32(-1)
  }
  bytes(source: Buffer, from = 0, to = source.length) {
    this.room(4 + to - from)
    this.at = this.buffer.writeInt32BE(to - from, this.at)
    this.at += source.copy(this.buffer, this.at, from, to)
  }
  /** Bytes of a value being written (no length of their own). */
  raw(source: Buffer, from = 0, to = source.length) {
    this.room(to - from)
    this.at += source.copy(this.buffer, this.at, from, to)
  }
  text(value: string | null) {
    if (value === null) return this.null()
    this.room(4 + 3 * value.length)
    const length = this.buffer.write(value, this.at + 4)
    this.buffer.writeInt32BE(length, this.at)
    this.at += 4 + length
  }
  /** A row's first fields: how many, its campaign, its line. */
  start(campaign: Buffer, line: number) {
    this.room(2 + 20 + 8)
    this.at = putRowStart(this.buffer, this.at, campaign, line)
  }
  /**
   * The bytes written, and the buffer emptied for the next batch: the driver copies a chunk into
   * its message as it is written, so the same buffer is reused batch after batch.
   */
  take(): Buffer {
    const out = this.buffer.subarray(0, this.at)
    this.at = 0
    return out
  }
}

/** A JSON object's text around its values: `{"a":"`, `","b":"`, …, `"}` (`{}` for none). */
const objectParts = (names: readonly string[]) =>
  names.length === 0
    ? { parts: [], close: Buffer.from('{}') }
    : {
        parts: names.map((name, i) => Buffer.from(`${i === 0 ? '{' : '",'}${JSON.stringify(name)}:"`)),
        close: Buffer.from('"}'),
      }

/**
 * Writes to COPY and waits until the bytes are on the socket (one batch in flight at most). A COPY
 * Postgres refused is destroyed by the driver with Postgres' error, which is thrown here.
 */
function write(stream: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(chunk, (error) => (error ? reject(stream.errored ?? error) : resolve()))
  })
}

/** How an upload's rows are judged as they are read, beside what the API judged of each alone. */
export interface AudienceJudging {
  consent: AudienceConsent
  /** The blocking entries: those kept hashed, and the others (null: too many, joined in SQL after). */
  entries: { hashed: Map<string, boolean>; plain: Map<string, boolean> | null }
  seen: SeenRecipients
}

/** Why a recipient the API took is skipped after all: blocked by an entry of the list read whole. */
function blocked(
  recipient: string,
  field: string,
  judging: AudienceJudging,
): [CampaignSkipReason, string] | undefined {
  const { hashed, plain } = judging.entries
  let own = plain === null || plain.size === 0 ? undefined : plain.get(recipient)
  if (own === undefined && hashed.size > 0) own = hashed.get(judging.consent.hash(recipient))
  return own === undefined ? undefined : [own ? 'opted_out' : 'suppressed', optOutDetail(field, own)]
}

/** Why a row the API took is skipped after all: a recipient taken on an earlier line, or blocked. */
function judgeTaken(row: AudienceRow, judging: AudienceJudging): [CampaignSkipReason, string] | undefined {
  const { phone, userId, line } = row
  const recipient = (phone ?? userId) as string
  const field = phone === null ? 'userId' : 'phone'
  const first = phone === null ? judging.seen.userId(recipient, line) : judging.seen.phone(recipient, line)
  if (first !== undefined) return ['duplicate', `${field}: the same recipient as line ${first}`]
  return blocked(recipient, field, judging)
}

/** How a batch is written: into `out`, for `campaign` (its uuid's bytes), the skipped counted by reason. */
interface Encoding {
  out: BinaryRows
  campaign: Buffer
  judging: AudienceJudging
  /**
   * A taken row keeps its raw line: the list is joined in SQL after, which may still skip it. Its
   * rows are then written a row each, never in blocks.
   */
  keepRaw: boolean
  skipped: Record<string, number>
  /** The plain rows' fields (`PlainRows.fields`) as a block's `block_fields`, made once. */
  blockFieldsOf?: readonly string[]
  blockFields?: Buffer
  /** The JSON text around a plain row's values, for its names (made once). */
  parts: { of?: readonly string[]; parts: Buffer[]; close: Buffer }
}

function encodeRow(row: AudienceRow, e: Encoding) {
  let { reason, detail } = row
  if (reason === null && (row.phone !== null || row.userId !== null)) {
    const judged = judgeTaken(row, e.judging)
    if (judged) [reason, detail] = judged
  }
  const { out } = e
  out.start(e.campaign, row.line)
  out.text(row.phone)
  out.text(row.userId)
  if (reason === null) {
    out.text(row.variables ? JSON.stringify(row.variables) : null)
    out.bytes(PENDING)
    out.null()
    out.null()
    out.text(e.keepRaw ? cut(row.raw) : null)
    out.raw(NO_BLOCK)
    return
  }
  e.skipped[reason] = (e.skipped[reason] ?? 0) + 1
  out.null()
  out.bytes(SKIPPED)
  out.text(reason)
  out.text(detail)
  out.text(cut(row.raw))
  out.raw(NO_BLOCK)
}

/** A plain row's raw line: its bytes as they came, unless longer than a raw line is kept. */
function rawOf(out: BinaryRows, source: Buffer, from: number, to: number) {
  if (to - from <= CAMPAIGN_AUDIENCE_RAW_CHARS) out.bytes(source, from, to)
  else out.text(cut(source.toString('utf8', from, to)))
}

/** `fields` as an array's value in COPY's binary format (one dimension, no nulls, text), its length first. */
function textArray(fields: readonly string[]): Buffer {
  const items = fields.map((field) => Buffer.from(field))
  const out = Buffer.alloc(4 + 20 + items.reduce((n, item) => n + 4 + item.length, 0))
  let at = out.writeInt32BE(out.length - 4, 0)
  for (const n of [1, 0, 25, items.length, 1]) at = out.writeInt32BE(n, at)
  for (const item of items) {
    at = out.writeInt32BE(item.length, at)
    at += item.copy(out, at)
  }
  return out
}

/** A row's first fields, as every row written here begins: how many, its campaign, its line. */
function putRowStart(b: Buffer, at: number, campaign: Buffer, line: number): number {
  let p = at
  b[p++] = 0
  b[p++] = FIELDS
  p = put32(b, p, 16)
  p = put(b, p, campaign, 0, 16)
  p = put32(b, p, 4)
  return put32(b, p, line)
}

/**
 * A block's row: the `count` taken lines from `line` on, as their bytes came (`source` from `from`
 * to `to`, the newlines between them included), `pending`, with its fields' names.
 */
function writeBlock(e: Encoding, source: Buffer, from: number, to: number, line: number, count: number) {
  const { out } = e
  const fields = e.blockFields as Buffer
  out.room(2 + 20 + 8 + 12 + 4 + PENDING.length + 12 + 8 + 4 + (to - from) + fields.length)
  const b = out.buffer
  let p = putRowStart(b, out.at, e.campaign, line)
  p = put(b, p, NULLS_3, 0, 12)
  p = put32(b, p, PENDING.length)
  p = put(b, p, PENDING, 0, PENDING.length)
  p = put(b, p, NULLS_3, 0, 12)
  p = put32(b, p, 4)
  p = put32(b, p, count)
  p = put32(b, p, to - from)
  p += source.copy(b, p, from, to)
  out.at = p + fields.copy(b, p)
}

/**
 * A chunk's plain rows: each judged against the rows before it (a duplicate) and the list; the
 * taken ones on consecutive lines kept together as a block, their lines' bytes as they came
 * (unless each taken row must keep its raw line: then a row each, variables as JSON text).
 */
function encodePlain(rows: PlainRows, e: Encoding) {
  const { out, judging } = e
  const { source, lines, keys, stride } = rows
  const spans = rows.spans
  const { hashed, plain } = judging.entries
  const listed = hashed.size > 0 || (plain !== null && plain.size > 0)
  const blocks = !e.keepRaw
  if (blocks && e.blockFieldsOf !== rows.fields) {
    e.blockFieldsOf = rows.fields
    e.blockFields = textArray(rows.fields)
  }
  const blockBytes = Math.max(BLOCK_MIN_BYTES, BLOCK_ROW_BYTES - 100 - (e.blockFields?.length ?? 0))
  // The block being gathered: its first line, how many lines, its bytes' start and end.
  let first = 0
  let count = 0
  let from = 0
  let to = 0
  for (let i = 0, at = 0; i < rows.count; i++, at += stride) {
    const line = lines[i] as number
    const lineFrom = spans[at] as number
    const lineTo = spans[at + 1] as number
    const phoneFrom = spans[at + 2] as number
    const phoneTo = spans[at + 3] as number
    const seen = judging.seen.phoneKey(keys[i] as number, line)
    const judged =
      seen !== undefined
        ? (['duplicate', `phone: the same recipient as line ${seen}`] as const)
        : listed
          ? blocked(source.toString('latin1', phoneFrom, phoneTo), 'phone', judging)
          : undefined
    if (blocks && !judged) {
      if (count > 0 && line === first + count && lineTo - from <= blockBytes) {
        count++
        to = lineTo
        continue
      }
      if (count > 0) writeBlock(e, source, from, to, first, count)
      first = line
      count = 1
      from = lineFrom
      to = lineTo
      continue
    }
    if (count > 0) {
      writeBlock(e, source, from, to, first, count)
      count = 0
    }
    out.room(2 + 20 + 8 + 4 + (phoneTo - phoneFrom) + 4)
    const b = out.buffer
    let p = putRowStart(b, out.at, e.campaign, line)
    p = put32(b, p, phoneTo - phoneFrom)
    p = put(b, p, source, phoneFrom, phoneTo)
    out.at = put32(b, p, -1)
    if (judged) {
      const [reason, detail] = judged
      e.skipped[reason] = (e.skipped[reason] ?? 0) + 1
      out.null()
      out.bytes(SKIPPED)
      out.text(reason)
      out.text(detail)
      rawOf(out, source, lineFrom, lineTo)
      out.raw(NO_BLOCK)
      continue
    }
    // Each taken row keeps its raw line (the list is joined in SQL after): a row each.
    pendingWithVariables(out, rows, at, e.parts)
    rawOf(out, source, lineFrom, lineTo)
    out.raw(NO_BLOCK)
  }
  if (count > 0) writeBlock(e, source, from, to, first, count)
}

/** Copies bytes one by one: for the few bytes of a field, cheaper than a call into Buffer.copy. */
function put(to: Uint8Array, at: number, from: Uint8Array, start: number, end: number): number {
  for (let i = start; i < end; i++) to[at++] = from[i] as number
  return at
}

const put32 = (to: Uint8Array, at: number, n: number) => {
  to[at] = n >>> 24
  to[at + 1] = (n >>> 16) & 255
  to[at + 2] = (n >>> 8) & 255
  to[at + 3] = n & 255
  return at + 4
}

/** A taken row's last fields but its raw line: `pending` then reason and detail null. */
const PENDING_TAIL = Buffer.concat([Buffer.from([0, 0, 0, 7]), PENDING, Buffer.alloc(8, 0xff)])

/**
 * A taken plain row's variables, as JSON text (the names' parts around the values' bytes: nothing
 * in a plain value needs escaping), and its state.
 */
function pendingWithVariables(out: BinaryRows, rows: PlainRows, at: number, json: Encoding['parts']) {
  if (json.of !== rows.names) Object.assign(json, { of: rows.names }, objectParts(rows.names))
  const { parts, close } = json
  const { source, spans } = rows
  let length = close.length
  for (let v = 0; v < parts.length; v++)
    length +=
      (parts[v] as Buffer).length + (spans[at + 5 + 2 * v] as number) - (spans[at + 4 + 2 * v] as number)
  const tail = PENDING_TAIL
  out.room(4 + length + tail.length)
  const b = out.buffer
  let p = put32(b, out.at, length)
  for (let v = 0; v < parts.length; v++) {
    const part = parts[v] as Buffer
    p = put(b, p, part, 0, part.length)
    p = put(b, p, source, spans[at + 4 + 2 * v] as number, spans[at + 5 + 2 * v] as number)
  }
  p = put(b, p, close, 0, close.length)
  out.at = put(b, p, tail, 0, tail.length)
}

/**
 * Writes the rows into `campaign_recipients` by COPY (binary) as they are read, a batch at a time
 * (the next read only once the last is on the socket): taken rows `pending`, plain ones on
 * consecutive lines as blocks of their lines' bytes (a row of up to 1,900 bytes of lines, read by
 * `dispatch_campaign_block_rows`: a tuple and a key entry per 50 rows or so, where a row each cost
 * Postgres 2.4× a bare COPY of the file), the others a row each with their variables (JSON
 * text); no raw line (unless the list is joined in SQL after, which may still skip them: then no
 * blocks either), skipped ones with their reason and their raw line (cut). A row of a recipient taken on an earlier
 * line, or that a blocking entry names, is skipped here. Answers how many rows, and how many were
 * skipped by each reason.
 */
export async function copyAudience(
  sql: TransactionSql,
  campaignId: string,
  rows: AsyncIterable<AudienceBatch>,
  judging: AudienceJudging,
  /** Where the rows go: campaign_recipients, or a table of the campaign's own made in this transaction. */
  into: { table: string; created: boolean } = { table: 'campaign_recipients', created: false },
): Promise<{ count: number; skippedByReason: Record<string, number> }> {
  const skippedByReason: Record<string, number> = {}
  let count = 0
  // A table made in this transaction takes its rows frozen: nobody else sees it before it commits,
  // and its pages need no later pass to mark them visible to all.
  const copy = await sql`
    copy ${sql(into.table)} (campaign_id, line, phone, user_id, variables, state, reason, detail, raw, lines, block, block_fields)
    from stdin (format binary${into.created ? sql`, freeze` : sql``})`.writable()
  // Its errors are the upload's, thrown below; destroying it (below) must not throw them again.
  copy.on('error', () => {})
  const encoding: Encoding = {
    out: new BinaryRows(),
    campaign: Buffer.from(campaignId.replaceAll('-', ''), 'hex'),
    judging,
    keepRaw: judging.entries.plain === null,
    skipped: skippedByReason,
    parts: { parts: [], close: Buffer.alloc(0) },
  }
  try {
    await write(copy, COPY_HEADER)
    for await (const batch of rows) {
      for (const part of batch) {
        if (part instanceof PlainRows) {
          encodePlain(part, encoding)
          count += part.count
        } else {
          encodeRow(part, encoding)
          count++
        }
      }
      // Nothing of the batch is held while Postgres takes it: the API's timers allocate meanwhile,
      // and the young-generation collections they cause would move rows still held to the old
      // space, which then grows with garbage until the upload ends.
      batch.length = 0
      if (encoding.out.at > 0) await write(copy, encoding.out.take())
    }
    await write(copy, COPY_TRAILER)
    const copied = finished(copy)
    copied.catch(() => {})
    copy.end()
    // A COPY Postgres refuses after its last bytes were sent is never told to the stream (the
    // driver waits for a completion that will not come): the next statement, queued behind it
    // once the stream has handed over (the turn after end()), fails instead and ends the wait.
    await new Promise((resolve) => setImmediate(resolve))
    await Promise.race([copied, sql`select 1`])
  } catch (error) {
    copy.destroy(error as Error)
    throw error
  }
  return { count, skippedByReason }
}
