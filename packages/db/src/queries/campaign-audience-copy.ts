import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { CAMPAIGN_AUDIENCE_RAW_CHARS, type CampaignSkipReason } from '@dispatch/contracts'
import type { TransactionSql } from 'postgres'
import { type AudienceConsent, optOutDetail } from './campaign-audience-judge.ts'
import type { SeenRecipients } from './campaign-audience-seen.ts'

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

const COPY_SPECIAL = /[\\\n\r\t]/
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }
/** A value in COPY's text format. */
const copyText = (value: string | null) =>
  value === null
    ? '\\N'
    : COPY_SPECIAL.test(value)
      ? value.replace(/[\\\n\r\t]/g, (c) => COPY_ESCAPES[c] as string)
      : value

const cut = (raw: string) =>
  raw.length <= CAMPAIGN_AUDIENCE_RAW_CHARS ? raw : raw.slice(0, CAMPAIGN_AUDIENCE_RAW_CHARS).toWellFormed()

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

/** Why a row the API took is skipped after all: a recipient taken on an earlier line, or blocked. */
function judgeTaken(row: AudienceRow, judging: AudienceJudging): [CampaignSkipReason, string] | undefined {
  const { phone, userId, line } = row
  const recipient = (phone ?? userId) as string
  const field = phone === null ? 'userId' : 'phone'
  const first = phone === null ? judging.seen.userId(recipient, line) : judging.seen.phone(recipient, line)
  if (first !== undefined) return ['duplicate', `${field}: the same recipient as line ${first}`]
  const { hashed, plain } = judging.entries
  let own = plain === null || plain.size === 0 ? undefined : plain.get(recipient)
  if (own === undefined && hashed.size > 0) own = hashed.get(judging.consent.hash(recipient))
  return own === undefined ? undefined : [own ? 'opted_out' : 'suppressed', optOutDetail(field, own)]
}

/**
 * A batch's rows as COPY text, one Buffer, each judged against the rows before it and the
 * suppression list; the skipped counted in `skipped`. A taken row is written without its raw line
 * (its recipient and variables say it all) unless the list is joined in SQL after, which may
 * still skip it.
 */
function encodeBatch(
  batch: AudienceRow[],
  campaignId: string,
  judging: AudienceJudging,
  skipped: Record<string, number>,
): Buffer {
  const keepRaw = judging.entries.plain === null
  let text = ''
  for (const row of batch) {
    let { reason, detail } = row
    if (reason === null && (row.phone !== null || row.userId !== null)) {
      const judged = judgeTaken(row, judging)
      if (judged) [reason, detail] = judged
    }
    if (reason !== null) skipped[reason] = (skipped[reason] ?? 0) + 1
    text +=
      reason === null
        ? `${campaignId}\t${row.line}\t${row.phone ?? '\\N'}\t${row.userId ?? '\\N'}\t` +
          `${row.variables ? copyText(JSON.stringify(row.variables)) : '\\N'}\tpending\t\\N\t\\N\t` +
          `${keepRaw ? copyText(cut(row.raw)) : '\\N'}\n`
        : `${campaignId}\t${row.line}\t${row.phone ?? '\\N'}\t${row.userId ?? '\\N'}\t\\N\tskipped\t` +
          `${reason}\t${copyText(detail)}\t${copyText(cut(row.raw))}\n`
  }
  return Buffer.from(text)
}

/**
 * Writes the rows into `campaign_recipients` by COPY as they are read, a batch at a time (the next
 * read only once the last is on the socket): taken rows `pending` with their variables (JSON
 * text), skipped ones with their reason and their raw line (cut). A row of a recipient taken on an
 * earlier line, or that a blocking entry names, is skipped here. Answers how many rows, and how
 * many were skipped by each reason.
 */
export async function copyAudience(
  sql: TransactionSql,
  campaignId: string,
  rows: AsyncIterable<AudienceRow[]>,
  judging: AudienceJudging,
): Promise<{ count: number; skippedByReason: Record<string, number> }> {
  const skippedByReason: Record<string, number> = {}
  let count = 0
  const copy = await sql`
    copy campaign_recipients (campaign_id, line, phone, user_id, variables, state, reason, detail, raw)
    from stdin`.writable()
  // Its errors are the upload's, thrown below; destroying it (below) must not throw them again.
  copy.on('error', () => {})
  try {
    for await (const batch of rows) {
      const payload = encodeBatch(batch, campaignId, judging, skippedByReason)
      count += batch.length
      // Nothing of the batch is held while Postgres takes it: the API's timers allocate meanwhile,
      // and the young-generation collections they cause would move rows still held to the old
      // space, which then grows with garbage until the upload ends.
      batch.length = 0
      if (payload.length > 0) await write(copy, payload)
    }
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
