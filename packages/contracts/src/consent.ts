import { join } from 'node:path'
import Type, { type Static } from 'typebox'
import { evalLuaScript, type LuaEvaluator, luaScripts } from './lua-scripts.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { Phone, UserId } from './recipients.ts'

/**
 * Consent: a recipient who opted out of a business number gets no more of what they opted out of.
 * Postgres keeps the suppression list (the record); Redis keeps a copy per business number and
 * recipient (`suppressionKey`), which sends are checked against without Postgres; a worker rebuilds
 * the copy from Postgres when its marker (`suppressionsLoadedKey`) is missing.
 */

/** What an entry blocks: marketing templates only, or everything (but the opt-out's confirmation). */
export const SUPPRESSION_SCOPES = ['marketing', 'all'] as const
export type SuppressionScope = (typeof SUPPRESSION_SCOPES)[number]

/** Where an entry came from. */
export const SUPPRESSION_SOURCES = ['keyword', 'user_preferences', '131050', 'api', 'admin'] as const
export type SuppressionSource = (typeof SUPPRESSION_SOURCES)[number]

const scripts = luaScripts(join(import.meta.dirname, 'lua/consent'), ['writeOptOut', 'checkMarketingConsent'])

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
  await evalLuaScript(redis, OPT_OUT_WRITE_SCRIPT, key, entry.owner ?? EVERY_KEY, entry.scope ?? '')
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

/**
 * Default keywords, matched against a reply's whole text once trimmed, lower-cased and stripped of
 * accents and punctuation around it: English, Portuguese and Spanish, as carriers and Twilio's
 * Advanced Opt-Out use them ("STOP", "PARAR", "BAJA"…). An admin replaces them per sender.
 */
export const DEFAULT_OPT_OUT_KEYWORDS = [
  'stop',
  'stopall',
  'unsubscribe',
  'cancel',
  'end',
  'quit',
  'optout',
  'opt out',
  'parar',
  'pare',
  'sair',
  'cancelar',
  'descadastrar',
  'baja',
  'darse de baja',
  'detener',
] as const
export const DEFAULT_OPT_IN_KEYWORDS = ['start', 'unstop', 'subscribe', 'voltar', 'alta', 'iniciar'] as const

/** A reply's text as keywords are matched: trimmed, lower-case, without accents or edge punctuation. */
export function keywordForm(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, '')
    .replace(/\s+/g, ' ')
}

/** The longest keyword, folded: a reply longer than this is never a keyword. */
export const KEYWORD_MAX_LENGTH = 40
/** The most keywords a sender's list holds. */
export const KEYWORDS_MAX_COUNT = 50

/** What a reply's text asks for: `opt-out`, `opt-in`, or nothing. */
export function keywordIntent(
  text: string,
  keywords: { optOut: readonly string[]; optIn: readonly string[] },
): 'opt-out' | 'opt-in' | undefined {
  const form = keywordForm(text)
  if (form.length === 0 || form.length > KEYWORD_MAX_LENGTH) return undefined
  if (keywords.optOut.some((k) => keywordForm(k) === form)) return 'opt-out'
  if (keywords.optIn.some((k) => keywordForm(k) === form)) return 'opt-in'
  return undefined
}

/** A sender's keyword lists: each word in its folded form (`keywordForm`), as replies are matched. */
export interface KeywordLists {
  optOut: readonly string[]
  optIn: readonly string[]
}

export const DEFAULT_KEYWORDS: KeywordLists = {
  optOut: DEFAULT_OPT_OUT_KEYWORDS,
  optIn: DEFAULT_OPT_IN_KEYWORDS,
}

const Keyword = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' })

/**
 * A sender's own keywords, set by an admin (`PATCH /api/admin/senders/:id`): they replace the
 * defaults for replies to that number (null: the defaults). Stored folded as replies are matched
 * (trimmed, lower-case, without accents or edge punctuation); a word in both lists is refused.
 */
export const ConsentKeywords = Type.Object(
  {
    optOut: Type.Array(Keyword, { minItems: 1, maxItems: KEYWORDS_MAX_COUNT }),
    optIn: Type.Array(Keyword, { maxItems: KEYWORDS_MAX_COUNT }),
  },
  {
    additionalProperties: false,
    description:
      "The sender's opt-out and opt-in keywords, replacing the defaults; matched against a reply's whole " +
      'text, case, accents and surrounding punctuation aside',
  },
)
export type ConsentKeywords = Static<typeof ConsentKeywords>

/**
 * An admin's keyword lists made ready to store: each word folded, duplicates dropped. Answers the
 * lists, or the problem naming its field (`body.consentKeywords.optOut[2] …`): a word that folds to
 * nothing or to more than KEYWORD_MAX_LENGTH characters, or a word in both lists.
 */
export function foldConsentKeywords(lists: ConsentKeywords, field: string): ConsentKeywords | string {
  const folded: Record<'optOut' | 'optIn', string[]> = { optOut: [], optIn: [] }
  for (const name of ['optOut', 'optIn'] as const) {
    for (const [i, word] of lists[name].entries()) {
      const form = keywordForm(word)
      const at = `${field}.${name}[${i}]`
      if (form.length === 0) return `${at} has no letters or digits to match`
      if (form.length > KEYWORD_MAX_LENGTH)
        return `${at} must be at most ${KEYWORD_MAX_LENGTH} characters once folded`
      if (!folded[name].includes(form)) folded[name].push(form)
    }
  }
  const both = folded.optIn.find((word) => folded.optOut.includes(word))
  if (both !== undefined) {
    const i = lists.optIn.findIndex((word) => keywordForm(word) === both)
    return `${field}.optIn[${i}] ${JSON.stringify(both)} is an opt-out keyword too: a word opts out or in, not both`
  }
  return folded
}

const ConfirmationText = Type.String({ minLength: 1, maxLength: 1024, pattern: '\\S' })

/**
 * The texts sent back at once to a user whose keyword opted them out (or in), through the same
 * number: the user just wrote, so the 24-hour window is open. Either may be left out (none sent).
 */
export const ConsentConfirmation = Type.Object(
  {
    optOut: Type.Optional(ConfirmationText),
    optIn: Type.Optional(ConfirmationText),
  },
  {
    additionalProperties: false,
    description:
      'Texts sent back to a user whose keyword opted them out (`optOut`) or back in (`optIn`), e.g. ' +
      '"You will get no more messages from Acme. Reply START to resume."',
  },
)
export type ConsentConfirmation = Static<typeof ConsentConfirmation>

/**
 * One confirmation to send (queue and outbox topic `QueueNames.consentConfirmations`): the text, to
 * the user (phone, else BSUID), from the business number the keyword came to. `outboxId` ties it to
 * the outbox row written with the opt-out.
 */
export const ConsentConfirmationJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    senderId: Type.String({ minLength: 1, maxLength: 64 }),
    phoneNumberId: Type.String({ pattern: '^[0-9]{1,32}$' }),
    intent: Type.Enum(['opt-out', 'opt-in']),
    phone: Type.Optional(Phone),
    userId: Type.Optional(UserId),
    text: ConfirmationText,
  },
  { additionalProperties: false },
)
export type ConsentConfirmationJob = Static<typeof ConsentConfirmationJob>
/** What the outbox row carries: the job without the id the relay adds. */
export type ConsentConfirmationPayload = Omit<ConsentConfirmationJob, 'outboxId'>

const DateTime = Type.String({ format: 'date-time' })

export const SuppressionView = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    /** The sender (business number) the recipient opted out of. */
    senderId: Type.String(),
    phoneNumberId: Type.String(),
    /** The recipient: a phone (E.164) or a BSUID. */
    recipient: Type.String(),
    scope: Type.Enum(SUPPRESSION_SCOPES),
    source: Type.Enum(SUPPRESSION_SOURCES),
    reason: Type.Union([Type.String(), Type.Null()]),
    /** The tenant whose entry it is (a key's entry); null for the recipient's own, an admin's, a tenantless key's. */
    tenantId: Type.Union([Type.String(), Type.Null()]),
    /** The key that added it (a key's entry); null for the recipient's own and an admin's. */
    apiKeyId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    createdAt: DateTime,
  },
  { additionalProperties: false },
)
export type SuppressionView = Static<typeof SuppressionView>

const Reason = Type.String({ minLength: 1, maxLength: 500, pattern: '\\S' })

/**
 * `GET /api/third-party/suppressions/:recipient`: whether a recipient is blocked for the asking key,
 * and by what. `entries` are those that block its sends (the recipient's own opt-outs and its
 * tenant's entries); `id` and `reason` only on its tenant's own, never on the recipient's or an admin's.
 */
export const SuppressionStatus = Type.Object(
  {
    recipient: Type.String({ description: 'As asked: a phone (E.164) or a BSUID' }),
    blocked: Type.Boolean({ description: 'Whether some send to them is refused for your key' }),
    scope: Type.Union([Type.Enum(SUPPRESSION_SCOPES), Type.Null()], {
      description: '`all` (every send refused), `marketing` (marketing templates), or null (none)',
    }),
    entries: Type.Array(
      Type.Object(
        {
          scope: Type.Enum(SUPPRESSION_SCOPES),
          source: Type.Enum(SUPPRESSION_SOURCES),
          /** `recipient`: their own opt-out (or an admin's), lifted only by them or an admin; `tenant`: yours. */
          owner: Type.Enum(['recipient', 'tenant']),
          id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
          reason: Type.Union([Type.String(), Type.Null()]),
          createdAt: DateTime,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
export type SuppressionStatus = Static<typeof SuppressionStatus>

/** `POST /suppressions`: the recipient (exactly one of `phone` and `userId`), what it blocks, why. */
export const CreateSuppressionBody = Type.Object(
  {
    phone: Type.Optional(Phone),
    userId: Type.Optional(UserId),
    scope: Type.Optional(Type.Enum(SUPPRESSION_SCOPES, { default: 'all' })),
    reason: Type.Optional(Reason),
  },
  { additionalProperties: false },
)
export type CreateSuppressionBody = Static<typeof CreateSuppressionBody>

/** `DELETE /suppressions/:id`: lifting an opt-out needs a reason, kept in the audit log. */
export const DeleteSuppressionBody = Type.Object({ reason: Reason }, { additionalProperties: false })

export const SuppressionListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(['createdAt'], { default: 'createdAt' }),
    recipient: Type.Optional(Type.String({ minLength: 1, maxLength: 160 })),
    scope: Type.Optional(Type.Enum(SUPPRESSION_SCOPES)),
    source: Type.Optional(Type.Enum(SUPPRESSION_SOURCES)),
  },
  { additionalProperties: false },
)
export type SuppressionListQuery = Static<typeof SuppressionListQuery>

export const SuppressionList = DataEnvelope(SuppressionView)

/** How many marketing messages went to a recipient from a business number in the cap's window. */
export const marketingCountKey = (prefix: string, phoneNumberId: string, recipientHash: string) =>
  `${prefix}:cap:{${phoneNumberId}:${recipientHash}}`

/**
 * Marketing messages' whole consent check in one round trip, each message's suppression entry (as
 * its key's owner reads it: `scopeForOwner`) and then the cap (lua/consent/checkMarketingConsent.lua:
 * any number of keys, in pairs).
 */
export const MARKETING_CONSENT_SCRIPT = scripts.checkMarketingConsent
