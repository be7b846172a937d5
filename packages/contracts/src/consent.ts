import Type, { type Static } from 'typebox'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { Phone, UserId } from './recipients.ts'

/**
 * Consent as the API speaks it: what a suppression entry blocks and where it came from, the opt-out
 * and opt-in keywords, the confirmations, and the suppression list's shapes. The Redis copy that
 * sends are checked against lives in the runtime package (`@dispatch/runtime`, consent-copy.ts).
 */

/** What an entry blocks: marketing templates only, or everything (but the opt-out's confirmation). */
export const SUPPRESSION_SCOPES = ['marketing', 'all'] as const
export type SuppressionScope = (typeof SUPPRESSION_SCOPES)[number]

/** Where an entry came from. */
export const SUPPRESSION_SOURCES = ['keyword', 'user_preferences', '131050', 'api', 'admin'] as const
export type SuppressionSource = (typeof SUPPRESSION_SOURCES)[number]

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
          /** The sender the entry is on: your key's own, or for a pooled key any number of its pool. */
          senderId: Type.String(),
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
