import {
  type ConsentConfirmationPayload,
  DEFAULT_KEYWORDS,
  DEFAULT_SENDER_ID,
  type KeywordLists,
  keywordForm,
  keywordIntent,
  QueueNames,
  type SuppressionScope,
} from '@dispatch/contracts'
import type { InboundMessage, OutboxOnChange } from '@dispatch/db'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { optInAll, optOutAll } from './suppression-list.ts'

/** The text of Meta's "Stop promotions" quick-reply button on marketing templates. */
const STOP_PROMOTIONS = keywordForm('Stop promotions')

/** What a reply asks for: an opt-out (and of what), an opt-in, or nothing. */
function intentOf(
  reply: InboundMessage,
  keywords: KeywordLists,
): { intent: 'opt-out'; scope: SuppressionScope } | { intent: 'opt-in' } | undefined {
  const content = reply.content as { text?: string; button?: { text?: string; payload?: string } }
  if (typeof content.text === 'string') {
    const intent = keywordIntent(content.text, keywords)
    if (intent === 'opt-out') return { intent, scope: 'all' }
    if (intent === 'opt-in') return { intent }
    return undefined
  }
  const button = content.button
  // A template's quick reply: "Stop promotions" ends marketing only; a STOP button, everything.
  if (reply.type === 'button' && button) {
    const said = [button.text, button.payload].filter((t): t is string => typeof t === 'string')
    if (said.some((t) => keywordForm(t) === STOP_PROMOTIONS)) return { intent: 'opt-out', scope: 'marketing' }
    if (said.some((t) => keywordIntent(t, keywords) === 'opt-out')) return { intent: 'opt-out', scope: 'all' }
  }
  return undefined
}

/**
 * The sender's confirmation for what a keyword did, as the outbox row written with the change: sent
 * back to the user (phone, else BSUID) from the number they wrote to. None for a "Stop promotions"
 * tap (WhatsApp itself confirms it), or when the sender has no text for it.
 */
function confirmationOf(
  reply: InboundMessage,
  senderId: string,
  text: string | undefined,
  intent: 'opt-out' | 'opt-in',
): OutboxOnChange | undefined {
  if (text === undefined) return undefined
  const payload: ConsentConfirmationPayload = {
    senderId,
    phoneNumberId: reply.phoneNumberId,
    intent,
    ...(reply.phone === null ? { userId: reply.userId as string } : { phone: reply.phone }),
    text,
  }
  return { topic: QueueNames.consentConfirmations, payload }
}

/**
 * Opt-outs and opt-ins said in replies: a reply whose whole text is one of the receiving sender's
 * opt-out keywords (its own list, else the defaults: STOP, PARAR, BAJA…, matched trimmed, case- and
 * accent-folded) adds an entry for every identity the user is known by (phone and BSUID) on that
 * business number; an opt-in keyword (START…) lifts them. Both in one transaction with the sender's
 * confirmation, if it has one and the list changed. A redelivered reply applies again (nothing
 * changes twice, nothing is confirmed twice). Throws when Postgres cannot record it, so the webhook
 * is not acknowledged and Meta delivers it again: an opt-out is never dropped. The sender's lists and
 * texts come from the send rules held in memory: no query more per reply.
 */
export async function applyConsentKeywords(
  app: FastifyInstance,
  log: FastifyBaseLogger,
  replies: InboundMessage[],
  now: Date,
): Promise<{ optedOut: number; optedIn: number }> {
  const counts = { optedOut: 0, optedIn: 0 }
  for (const reply of replies) {
    const senderId = app.sending.rules.senderOfNumber(reply.phoneNumberId) ?? DEFAULT_SENDER_ID
    const rules = app.sending.rules.get(senderId)
    const asked = intentOf(reply, rules?.keywords ?? DEFAULT_KEYWORDS)
    if (!asked) continue
    const recipients = [reply.phone, reply.userId].filter((r): r is string => r !== null)
    if (recipients.length === 0) continue
    const texts = rules?.consentConfirmation
    if (asked.intent === 'opt-out') {
      const added = await optOutAll(
        app.deps,
        log,
        recipients.map((recipient) => ({
          phoneNumberId: reply.phoneNumberId,
          senderId,
          recipient,
          scope: asked.scope,
          source: 'keyword' as const,
          reason: asked.scope === 'marketing' ? 'Stop promotions button' : 'Opt-out keyword',
          createdBy: 'platform',
        })),
        now,
        asked.scope === 'all' ? confirmationOf(reply, senderId, texts?.optOut, 'opt-out') : undefined,
      )
      counts.optedOut += added.filter((a) => a.changed).length
    } else {
      const removed = await optInAll(
        app.deps,
        log,
        recipients.map((recipient) => ({ phoneNumberId: reply.phoneNumberId, recipient })),
        { actor: 'platform', reason: 'Opt-in keyword' },
        now,
        confirmationOf(reply, senderId, texts?.optIn, 'opt-in'),
      )
      counts.optedIn += removed.filter((row) => row !== undefined).length
    }
  }
  return counts
}
