import type { SuppressionScope } from '@dispatch/contracts'

/**
 * Consent: a recipient who opted out of a business number gets no more of what they opted out of.
 * Postgres keeps the suppression list (the record); Redis keeps a copy per business number and
 * recipient (`suppressionKey`), which sends are checked against without Postgres; a worker rebuilds
 * the copy from Postgres when its marker (`suppressionsLoadedKey`) is missing.
 */

/**
 * The scope an entry holds in Redis, per business number and recipient: keyed by the recipient's
 * hash (`recipientHasher`), never its phone or BSUID, so the copy names no one, and an entry whose
 * recipient was erased (stored hashed in Postgres) is found by the same single `GET` as any other.
 */
export const suppressionKey = (prefix: string, phoneNumberId: string, recipientHash: string) =>
  `${prefix}:optout:{${phoneNumberId}:${recipientHash}}`

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

/** The Lua twin of `scopeForOwner` (value, owner): shared by the scripts that read the copy. */
const SCOPE_FOR_OWNER_LUA = `
local function scopeForOwner(value, owner)
  if not value then return false end
  local bar = string.find(value, '|', 1, true)
  if not bar then return value end
  local own = string.sub(value, 1, bar - 1)
  local mine = ''
  if owner ~= '' then
    local needle = '|' .. owner .. '='
    local at = string.find(value, needle, bar, true)
    if at then
      local from = at + #needle
      local to = string.find(value, '|', from, true)
      mine = string.sub(value, from, to and to - 1 or -1)
    end
  end
  if own == 'all' or mine == 'all' then return 'all' end
  if own ~= '' then return own end
  if mine ~= '' then return mine end
  return false
end
`

/**
 * Sets (or, with an empty scope, lifts) one owner's entry in the copy's value, the others kept:
 * KEYS[1] the entry (`suppressionKey`); ARGV[1] the owner ('' the recipient's own), ARGV[2] its
 * scope or ''. A value left empty is deleted. Answers the new value.
 */
export const OPT_OUT_WRITE_SCRIPT = `
local value = redis.call('GET', KEYS[1]) or ''
local own, rest = value, ''
local bar = string.find(value, '|', 1, true)
if bar then
  own = string.sub(value, 1, bar - 1)
  rest = string.sub(value, bar)
end
if ARGV[1] == '' then
  own = ARGV[2]
else
  local needle = '|' .. ARGV[1] .. '='
  local at = string.find(rest, needle, 1, true)
  if at then
    local after = string.find(rest, '|', at + 1, true)
    rest = string.sub(rest, 1, at - 1) .. (after and string.sub(rest, after) or '')
  end
  if ARGV[2] ~= '' then rest = rest .. needle .. ARGV[2] end
end
local new = own .. rest
if new == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], new) end
return new
`

/** What writes the copy: EVAL (a change to the list is rare; the rebuild calls the script by sha). */
interface CopyWriter {
  eval(script: string, numberOfKeys: number, ...keysAndArgs: string[]): Promise<unknown>
}

/** Sets one owner's entry in the copy (`scope` null: lifts it), unannounced (a lift needs no reading). */
export async function writeOptOutCopy(
  redis: CopyWriter,
  prefix: string,
  entry: {
    phoneNumberId: string
    recipientHash: string
    scope: SuppressionScope | null
    owner?: SuppressionOwner
  },
): Promise<void> {
  const key = suppressionKey(prefix, entry.phoneNumberId, entry.recipientHash)
  await redis.eval(OPT_OUT_WRITE_SCRIPT, 1, key, entry.owner ?? EVERY_KEY, entry.scope ?? '')
}

/** The wider of two scopes read for one send (the recipient's own and its owner's): null for none. */
export const widerScope = (a: string | null | undefined, b: string | null | undefined) =>
  a === 'all' || b === 'all' ? 'all' : a === 'marketing' || b === 'marketing' ? 'marketing' : null

/**
 * Set once the Redis copy holds every entry: without it, a missing entry is unknown, not absent.
 * `hashed`: the copy keyed by the recipient's hash (before, by the recipient itself); a new name, so
 * the worker rebuilds the copy in the new shape once after the upgrade.
 */
export const suppressionsLoadedKey = (prefix: string) => `${prefix}:optout:hashed-loaded`

/**
 * Where each opt-out written to the Redis copy is announced (`optOutAnnouncement`), and a rebuilt
 * copy (`OPT_OUTS_RESET`): a stream kept OPT_OUT_ANNOUNCEMENTS_KEEP_MS, so a worker that read it
 * since before a message was accepted and found nothing of its recipient skips reading the entry at
 * delivery (apps/worker/src/consent/watch.ts); a worker starting catches up on it.
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
  redis: CopyWriter & { xadd(key: string, ...args: string[]): Promise<unknown> },
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
 * its key's owner reads it: `scopeForOwner`) and then the cap: KEYS in pairs, the entry
 * (`suppressionKey`) and the count (`marketingCountKey`) of each message in turn; ARGV[1] the cap's
 * count, ARGV[2] its window (ms, from the first message counted), then each message's owner in
 * turn. Answers one item per pair: the entry's scope when one blocks it (nothing counted), else 1
 * (counted) or 0 (over the cap). A pair's keys share a hash tag: on a Cluster, one pair per call.
 */
export const MARKETING_CONSENT_SCRIPT = `${SCOPE_FOR_OWNER_LUA}
local answers = {}
for i = 1, #KEYS, 2 do
  local scope = scopeForOwner(redis.call('GET', KEYS[i]), ARGV[2 + (i + 1) / 2])
  if scope then
    answers[#answers + 1] = scope
  else
    local n = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
    if n >= tonumber(ARGV[1]) then
      answers[#answers + 1] = 0
    else
      redis.call('INCR', KEYS[i + 1])
      if n == 0 then redis.call('PEXPIRE', KEYS[i + 1], ARGV[2]) end
      answers[#answers + 1] = 1
    end
  end
end
return answers
`
