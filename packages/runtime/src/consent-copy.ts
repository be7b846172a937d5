import { join } from 'node:path'
import type { SuppressionScope } from '@dispatch/contracts'
import { evalLuaScript, type LuaEvaluator, luaScripts } from './lua-scripts.ts'

/**
 * Consent: a recipient who opted out of a business number gets no more of what they opted out of.
 * Postgres keeps the suppression list (the record); Redis keeps a copy per business number and
 * recipient (`suppressionKey`), which sends are checked against without Postgres; a worker rebuilds
 * the copy from Postgres when its marker (`suppressionsLoadedKey`) is missing.
 */

const scripts = luaScripts(join(import.meta.dirname, 'lua/consent'), [
  'writeOptOut',
  'noteOptOutNumber',
  'checkMarketingConsent',
])

/**
 * The scope an entry holds in Redis, per business number and recipient: keyed by the recipient's
 * hash (`recipientHasher`), never its phone or BSUID, so the copy names no one, and an entry whose
 * recipient was erased (stored hashed in Postgres) is found by the same single `GET` as any other.
 */
export const suppressionKey = (prefix: string, phoneNumberId: string, recipientHash: string) =>
  `${prefix}:optout:{${phoneNumberId}:${recipientHash}}`

/**
 * The business numbers a recipient has (or had) an entry on, by the recipient's hash: each number
 * followed by a space, e.g. `1055501 1055502 `. Written before the entry (`noteOptOutNumber`), never
 * trimmed by a lift: every number with an entry is listed, some listed may have none left. A send
 * through a pool reads this one key instead of every member's entry, and reads the entries of the
 * listed members only (none, for nearly every recipient). Complete only under the copy's marker
 * (`suppressionsLoadedKey`).
 */
export const optOutNumbersKey = (prefix: string, recipientHash: string) =>
  `${prefix}:optout:numbers:{${recipientHash}}`

/** Whether `numbers` (an `optOutNumbersKey` value) lists `number`. */
export function listsNumber(numbers: string | null, number: string): boolean {
  if (!numbers) return false
  const needle = `${number} `
  // At the start or after a space: `15` is not listed by `115 `.
  for (let at = numbers.indexOf(needle); at !== -1; at = numbers.indexOf(needle, at + 1)) {
    if (at === 0 || numbers.charCodeAt(at - 1) === 32) return true
  }
  return false
}

/** Adds a number to a recipient's `optOutNumbersKey` (lua/consent/noteOptOutNumber-1.lua). */
export const OPT_OUT_NUMBER_SCRIPT = scripts.noteOptOutNumber

/**
 * Whom an entry blocks (`suppressions.owner`, docs/consent.md): '' for the recipient's own opt-outs
 * and an admin's (every key on the number); `tenant:<id>` for an entry a key of that tenant added;
 * `key:<id>` for one a key with no tenant added (the key is its own tenant). The same rule as the
 * column's generated expression.
 */
export type SuppressionOwner = string
export const EVERY_KEY: SuppressionOwner = ''
export const suppressionOwner = (by: { apiKeyId?: string | null; tenantId?: string | null }) =>
  by.apiKeyId ? (by.tenantId ? `tenant:${by.tenantId}` : `key:${by.apiKeyId}`) : EVERY_KEY

/**
 * The Redis copy's value per number and recipient holds every owner's entry, so a send reads one key
 * (one slot of the turn's MGET) whoever it is from: the recipient's own scope first (`all`,
 * `marketing`, or nothing), then `|<owner>=<scope>` for each owner's entry, e.g. `marketing` (the
 * recipient's own only, as before owners), `|tenant:acme=all`, `all|key:5f1e…=marketing`. Owners
 * hold neither `|` nor `=` (tenant ids are `[A-Za-z0-9._-]`). Written by OPT_OUT_WRITE_SCRIPT only.
 * Its Lua twin, for the scripts that read the copy: lua/consent/includes/scopeForOwner.lua.
 */
export function scopeForOwner(value: string | null, owner: SuppressionOwner): SuppressionScope | null {
  if (value === null) return null
  const bar = value.indexOf('|')
  if (bar === -1) return value as SuppressionScope
  const own = bar === 0 ? null : value.slice(0, bar)
  if (owner === EVERY_KEY) return own as SuppressionScope | null
  const needle = `|${owner}=`
  const at = value.indexOf(needle, bar)
  if (at === -1) return own as SuppressionScope | null
  const from = at + needle.length
  const to = value.indexOf('|', from)
  return widerScope(own, value.slice(from, to === -1 ? undefined : to))
}

/**
 * Sets (or, with an empty scope, lifts) one owner's entry in the copy's value, the others kept
 * (lua/consent/writeOptOut-1.lua).
 */
export const OPT_OUT_WRITE_SCRIPT = scripts.writeOptOut

/** Sets one owner's entry in the copy (`scope` null: lifts it), unannounced (a lift needs no reading). */
export async function writeOptOutCopy(
  // EVAL: a change to the list is rare; the rebuild calls the script by sha.
  redis: LuaEvaluator,
  prefix: string,
  entry: {
    phoneNumberId: string
    recipientHash: string
    scope: SuppressionScope | null
    owner?: SuppressionOwner
  },
): Promise<void> {
  const key = suppressionKey(prefix, entry.phoneNumberId, entry.recipientHash)
  // The number listed first: an entry is never in the copy without its number in the list.
  if (entry.scope) {
    await evalLuaScript(
      redis,
      OPT_OUT_NUMBER_SCRIPT,
      optOutNumbersKey(prefix, entry.recipientHash),
      entry.phoneNumberId,
    )
  }
  await evalLuaScript(redis, OPT_OUT_WRITE_SCRIPT, key, entry.owner ?? EVERY_KEY, entry.scope ?? '')
}

/** The wider of two scopes read for one send (the recipient's own and its owner's): null for none. */
export const widerScope = (a: string | null | undefined, b: string | null | undefined) =>
  a === 'all' || b === 'all' ? 'all' : a === 'marketing' || b === 'marketing' ? 'marketing' : null

/**
 * Set once the Redis copy holds every entry, and every recipient's list of numbers
 * (`optOutNumbersKey`): without it, a missing entry is unknown, not absent. The name says the
 * copy's shape (`numbered`: with the lists; before, `hashed-loaded`: keyed by the recipient's hash
 * without them): a new name, so the worker rebuilds the copy in the new shape once after an upgrade.
 */
export const suppressionsLoadedKey = (prefix: string) => `${prefix}:optout:numbered-loaded`

/**
 * Where each opt-out written to the Redis copy is announced (`optOutAnnouncement`), and a rebuilt
 * copy (`OPT_OUTS_RESET`): a stream kept OPT_OUT_ANNOUNCEMENTS_KEEP_MS, so a worker that read it
 * since before a message was accepted and found nothing of its recipient skips reading the entry at
 * delivery (apps/worker/src/messages/consent/watch.ts); a worker starting catches up on it.
 */
export const optOutsStream = (prefix: string) => `${prefix}:optout:announced`
export const optOutAnnouncement = (phoneNumberId: string, recipientHash: string) =>
  `${phoneNumberId}:${recipientHash}`
export const OPT_OUTS_RESET = 'reset'
export const OPT_OUT_ANNOUNCEMENTS_KEEP_MS = 15 * 60_000

/**
 * Writes one entry of the Redis copy, then announces it: every writer of an entry goes through here,
 * so none is written unannounced (what lets a worker skip the read). Rejects at the step that
 * failed; an entry not written is not announced.
 */
export async function copyOptOut(
  redis: LuaEvaluator & { xadd(key: string, ...args: string[]): Promise<unknown> },
  prefix: string,
  entry: { phoneNumberId: string; recipientHash: string; scope: SuppressionScope; owner?: SuppressionOwner },
): Promise<void> {
  await writeOptOutCopy(redis, prefix, entry)
  await announceOptOut(redis, prefix, optOutAnnouncement(entry.phoneNumberId, entry.recipientHash))
}

/** Announces an opt-out written to the copy (or `OPT_OUTS_RESET`); older announcements are trimmed. */
export async function announceOptOut(
  redis: { xadd(key: string, ...args: string[]): Promise<unknown> },
  prefix: string,
  announcement: string,
): Promise<void> {
  const oldest = String(Date.now() - OPT_OUT_ANNOUNCEMENTS_KEEP_MS)
  await redis.xadd(optOutsStream(prefix), 'MINID', '~', oldest, '*', 'r', announcement)
}

/**
 * The key the copy used before it was keyed by hash (`<prefix>:optout:{<number>:<recipient>}`): an
 * erasure deletes it, should one outlive the upgrade, with the cap's count of the same shape.
 */
export const legacyRecipientKeys = (prefix: string, phoneNumberId: string, recipient: string) => [
  `${prefix}:optout:{${phoneNumberId}:${recipient}}`,
  `${prefix}:cap:{${phoneNumberId}:${recipient}}`,
]

/** How many marketing messages went to a recipient from a business number in the cap's window. */
export const marketingCountKey = (prefix: string, phoneNumberId: string, recipientHash: string) =>
  `${prefix}:cap:{${phoneNumberId}:${recipientHash}}`

/**
 * Marketing messages' whole consent check in one round trip, each message's suppression entry (as
 * its key's owner reads it: `scopeForOwner`) and then the cap (lua/consent/checkMarketingConsent.lua:
 * any number of keys, in pairs).
 */
export const MARKETING_CONSENT_SCRIPT = scripts.checkMarketingConsent
