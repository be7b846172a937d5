import { recipientOf, type SuppressionScope } from '@dispatch/contracts'
import { suppressionOwner } from '@dispatch/runtime'
import { campaignCanceledFields, expiredFields, keyRevokedFields } from '../../shared/message-outcome.ts'
import { optedOutFields } from '../consent/check.ts'
import { type RecipientReads, readRecipient } from '../recipient-reads.ts'
import { fallbackMessage, isFreeForm, WINDOW_CLOSED_CODE } from '../service-window.ts'
import { fallBackAfterExpiry } from './fallback-triggers.ts'
import { messagingLimitGate } from './messaging-limit.ts'
import { countBesideClaim, countsAgainstLimit, type ReachCount } from './reach-beside-claim.ts'
import type { Cleared, Disposition, MessageDelivery } from './types.ts'

/** The fields of a free-form message whose window Dispatch found closed, with no fallback to send. */
const windowClosedFields = {
  lastErrorCode: WINDOW_CLOSED_CODE,
  lastErrorMessage:
    'Not sent: the 24-hour customer-service window with this recipient was closed when it was due (checked by Dispatch); send a template, or give the message a fallbackTemplate',
}

/** What the gates read beside the claim: the recipient's reads, and the limit's count on one server. */
export type GateInputs = RecipientReads & { reach: Promise<ReachCount> | undefined }

/**
 * What the gates read of the recipient in Redis: an opt-out made after the message was accepted
 * (when this process may not have heard of it), under `enforce` the recipient's window, and a
 * template's count against its portfolio's messaging limit (on one server, by a script that reads
 * the window itself; on a Cluster the window, the count following the gates). Started beside the
 * claim, not after it, so no round trip more on the job's way (a read that turns out unneeded, the
 * message canceled or expired, is dropped; a recipient counted for a message then not sent is
 * given back, deliver.ts). A message the gates stop before any read (expired, its key revoked) is
 * not counted.
 */
export function readGateInputs(delivery: MessageDelivery): GateInputs {
  const { data, lane, deps } = delivery
  const { phoneNumberId } = lane.platform
  const recipient = recipientOf(data.message.body)
  const recipientHash = deps.hash(recipient)
  const reach =
    expired(delivery) || keyRevoked(delivery)
      ? undefined
      : countBesideClaim(delivery, recipient, recipientHash)
  const acceptedAt = Date.parse(data.acceptedAt)
  const mustRead = (number: string) => deps.optOuts?.mustRead(number, recipientHash, acceptedAt) ?? true
  // A pooled message: its pool's other numbers' opt-outs stop it too, those of its pool now (a job
  // an earlier version accepted carries its pool's numbers then, `optOutNumbers`).
  const others = (numbers: readonly string[] | undefined) =>
    numbers?.filter((number) => number !== phoneNumberId && mustRead(number))
  const pooled =
    data.optOutNumbers ??
    (data.senderPoolId ? deps.rotation?.poolNumbers(data.senderPoolId, acceptedAt) : undefined)
  const reads = readRecipient(
    deps.claims,
    deps.prefix,
    {
      phoneNumberId,
      recipient,
      recipientHash,
      // Jobs accepted before they carried the tenant read the key's own entries.
      owner: suppressionOwner({ apiKeyId: data.apiKeyId, tenantId: data.tenantId ?? null }),
    },
    {
      optOut: mustRead(phoneNumberId),
      optOutAlso: pooled instanceof Promise ? pooled.then(others) : others(pooled),
      window:
        (lane.settings.serviceWindowPolicy === 'enforce' && isFreeForm(data.message)) ||
        (reach === undefined && countsAgainstLimit(delivery)),
    },
  )
  return { ...reads, reach }
}

/** Why a gate stopped a message: what is recorded (no attempt spent), and the log line. */
type Stop = {
  kind: 'stop'
  status: 'expired' | 'canceled' | 'failed'
  fields: { lastErrorCode: string; lastErrorMessage: string }
  why: string
  logged?: object
}

/** Past its validity (a backlog, an outage, the platform's rate limits): never sent late. */
function expired({ data }: MessageDelivery): Stop | undefined {
  const { expiresAt } = data
  if (!(expiresAt && Date.now() > Date.parse(expiresAt))) return undefined
  const why = 'message expired before it could be sent'
  return { kind: 'stop', status: 'expired', fields: expiredFields(expiresAt), why, logged: { expiresAt } }
}

/**
 * Its key revoked since it was accepted (in a bundle, mid-retry, admitted before the sweep): never
 * sent. A lookup in memory, no round trip.
 */
function keyRevoked({ data, deps }: MessageDelivery): Stop | undefined {
  if (!deps.revokedKeys?.has(data.apiKeyId)) return undefined
  const why = 'its key was revoked before it was sent; canceled'
  return { kind: 'stop', status: 'canceled', fields: keyRevokedFields, why }
}

/**
 * Its campaign canceled since it was fed (held for the messaging limit, mid-retry, stored after the
 * cancel's sweep passed: canceled-campaigns.ts says why the sweep alone is not enough): never sent.
 */
function campaignCanceled({ data, deps }: MessageDelivery): Stop | undefined {
  if (!deps.canceledCampaigns?.has(data.batchId, data.apiKeyId)) return undefined
  const why = 'its campaign was canceled before it was sent; canceled'
  return { kind: 'stop', status: 'canceled', fields: campaignCanceledFields, why }
}

/**
 * Opted out since it was accepted (a STOP, an entry added; of marketing: "Stop promotions", Meta's
 * user_preferences, a 131050), of everything or of what this message is: never sent.
 */
function optedOut({ data }: MessageDelivery, scope: SuppressionScope | null): Stop | undefined {
  if (!(scope === 'all' || (scope === 'marketing' && data.marketing === true))) return undefined
  const why = 'recipient opted out before it was sent; canceled'
  return { kind: 'stop', status: 'canceled', fields: optedOutFields(scope), why, logged: { scope } }
}

/**
 * The 24-hour window under the sender's `enforce` policy: a scheduled or backlogged message can
 * outlive it. Known closed, the fallback template goes instead, or the message fails unsent.
 */
function serviceWindow(
  { data }: MessageDelivery,
  window: 'open' | 'closed' | 'unknown' | undefined,
): Cleared | Stop {
  if (window !== 'closed') return { kind: 'send', message: data.message, fallbackUsed: false }
  const fallback = fallbackMessage(data)
  if (fallback) return { kind: 'send', message: fallback, fallbackUsed: true }
  const why = '24-hour window closed and no fallback template; failed without sending'
  return { kind: 'stop', status: 'failed', fields: windowClosedFields, why }
}

/** A stopped message recorded, counted and logged: it ends here, unsent. */
async function recordStop(delivery: MessageDelivery, stop: Stop): Promise<Disposition> {
  const { run, lane, deps, log } = delivery
  const { status, fields } = stop
  await deps.recorder.record(delivery.outcome(status, { attempts: run.attemptsMade, ...fields }))
  if (status === 'expired') deps.metrics?.expired(lane.senderId)
  else if (status === 'canceled') deps.metrics?.canceled(lane.senderId)
  else deps.metrics?.failed(lane.senderId, fields.lastErrorCode)
  log.info(stop.logged ?? {}, stop.why)
  if (status === 'expired') await fallBackAfterExpiry(delivery)
  return status === 'failed'
    ? { kind: 'failed', reason: `${fields.lastErrorCode}: ${fields.lastErrorMessage}` }
    : { kind: 'done', result: { outcome: status } }
}

/**
 * Step 3: the gates before the platform, in order: the message's validity, its key, its campaign,
 * the recipient's opt-outs, the 24-hour window, the portfolio's messaging limit. A message stopped
 * at one is recorded and never sent; one held by the limit waits, `scheduled`.
 */
export async function gate(delivery: MessageDelivery, reads: GateInputs): Promise<Cleared | Disposition> {
  const stop =
    expired(delivery) ??
    keyRevoked(delivery) ??
    campaignCanceled(delivery) ??
    optedOut(delivery, await reads.optOut)
  if (stop) return recordStop(delivery, stop)
  const window = await reads.window
  // Under `enforce` a free-form message's; a template's is read for the limit only.
  const enforced =
    delivery.lane.settings.serviceWindowPolicy === 'enforce' && isFreeForm(delivery.data.message)
  const cleared = serviceWindow(delivery, enforced ? window : undefined)
  if (cleared.kind !== 'send') return recordStop(delivery, cleared)
  return messagingLimitGate(delivery, cleared, window, reads.reach)
}
