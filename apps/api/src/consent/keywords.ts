import {
  DEFAULT_KEYWORDS,
  DEFAULT_SENDER_ID,
  type KeywordLists,
  keywordForm,
  keywordIntent,
  type SuppressionScope,
} from '@dispatch/contracts'
import type { InboundMessage } from '@dispatch/db'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { optIn, optOut } from './suppression-list.ts'

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
 * Opt-outs and opt-ins said in replies: a reply whose whole text is one of the receiving sender's
 * opt-out keywords (its own list, else the defaults: STOP, PARAR, BAJA…, matched trimmed, case- and
 * accent-folded) adds an entry for every identity the user is known by (phone and BSUID) on that
 * business number; an opt-in keyword (START…) lifts them. A redelivered reply applies again
 * (nothing changes twice). Throws when Postgres cannot record it, so the webhook is not acknowledged
 * and Meta delivers it again: an opt-out is never dropped. The sender's lists come from the send
 * rules held in memory: no query more per reply.
 */
export async function applyConsentKeywords(
  app: FastifyInstance,
  log: FastifyBaseLogger,
  replies: InboundMessage[],
  now: Date,
): Promise<{ optedOut: number; optedIn: number }> {
  const counts = { optedOut: 0, optedIn: 0 }
  for (const reply of replies) {
    const senderId = app.sendRules.senderOfNumber(reply.phoneNumberId) ?? DEFAULT_SENDER_ID
    const asked = intentOf(reply, app.sendRules.get(senderId)?.keywords ?? DEFAULT_KEYWORDS)
    if (!asked) continue
    for (const recipient of [reply.phone, reply.userId]) {
      if (recipient === null) continue
      if (asked.intent === 'opt-out') {
        const { changed } = await optOut(
          app.deps,
          log,
          {
            phoneNumberId: reply.phoneNumberId,
            senderId,
            recipient,
            scope: asked.scope,
            source: 'keyword',
            reason: asked.scope === 'marketing' ? 'Stop promotions button' : 'Opt-out keyword',
            createdBy: 'platform',
          },
          now,
        )
        if (changed) counts.optedOut++
      } else {
        const removed = await optIn(
          app.deps,
          log,
          { phoneNumberId: reply.phoneNumberId, recipient },
          { actor: 'platform', reason: 'Opt-in keyword' },
          now,
        )
        if (removed) counts.optedIn++
      }
    }
  }
  return counts
}
