import type { ComponentChildren } from 'preact'
import { channelName, fallbackReason, fallbackState } from './channel.ts'
import { ErrorCode } from './error-code.tsx'
import { CopyButton, Id } from './id.tsx'
import { StatusBadge } from './status.tsx'
import { Time } from './time.tsx'

interface Facts {
  messageId: string
  status: string
  phone: string | null
  userId: string | null
  type: string
  clientReference: string | null
  createdAt: string
  lastError: { code: string; message: string } | null
  /** Its channel fallback, once decided (docs/fallback.md). */
  channel?: 'whatsapp' | 'sms'
  fallback?: {
    reason: string
    reasonCode: string | null
    at: string
    state: string
    status: string | null
    error: { code: string; message: string } | null
    price?: { amount: string; currency: string }
    /** WhatsApp reported it delivered then, whenever it came (after a failure too). */
    whatsappDeliveredAt?: string
  }
  /** Its latest move off a pool's number that left the rotation (docs/sender-pools.md). */
  senderChanged?: { from: string; to: string; at: string; reason: string }
}

/** Why a pool's number left the rotation, in words (docs/sender-pools.md, "Health: who is in rotation"). */
const OUT_OF_ROTATION: Record<string, string> = {
  paused: 'paused by an admin',
  needs_attention: 'held by the service',
  account_banned: 'its account banned',
  account_restricted: 'its account restricted',
  account_disconnected: 'its account disconnected',
  quality_red: 'its quality RED',
  flagged: 'its quality FLAGGED',
  rate_limited: 'rate-limited by the platform',
}

/** Its latest move to another number of its sender pool: from which, to which, why and when. */
function SenderChangedFacts({ change }: { change: NonNullable<Facts['senderChanged']> }) {
  return (
    <>
      <dt>Sender changed</dt>
      <dd>
        <Id value={change.from} /> → <Id value={change.to} />:{' '}
        {OUT_OF_ROTATION[change.reason] ?? change.reason}, <Time at={change.at} />
      </dd>
    </>
  )
}

/** Its SMS fallback: what became of it, why, when it was decided, and how the SMS fared. */
function FallbackFacts({ fallback }: { fallback: NonNullable<Facts['fallback']> }) {
  return (
    <>
      <dt>SMS fallback</dt>
      <dd>{fallbackState(fallback.state)}</dd>
      <dt>Fallback reason</dt>
      <dd>{fallbackReason(fallback.reason, fallback.reasonCode)}</dd>
      <dt>Fallback decided</dt>
      <dd>
        <Time at={fallback.at} />
      </dd>
      {fallback.status ? (
        <>
          <dt>SMS delivery</dt>
          <dd>{fallback.status}</dd>
        </>
      ) : null}
      {fallback.price ? (
        <>
          <dt>SMS price</dt>
          <dd>
            {fallback.price.amount} {fallback.price.currency}
          </dd>
        </>
      ) : null}
      {fallback.whatsappDeliveredAt ? (
        <>
          <dt>WhatsApp delivered</dt>
          <dd>
            <Time at={fallback.whatsappDeliveredAt} />
          </dd>
        </>
      ) : null}
      {fallback.error ? (
        <>
          <dt>SMS error</dt>
          <dd>
            <ErrorCode code={fallback.error.code} message={fallback.error.message} />
          </dd>
        </>
      ) : null}
    </>
  )
}

/**
 * A message's facts, as the console and the portal both show them; `children` are the facts only
 * one of them shows (the admins' key, sender and retries), placed after its type.
 */
export function MessageFacts({ message, children }: { message: Facts; children?: ComponentChildren }) {
  return (
    <dl class="facts">
      <dt>Id</dt>
      <dd>
        <Id value={message.messageId} /> <CopyButton value={message.messageId} label="message id" />
      </dd>
      <dt>Status</dt>
      <dd>
        <StatusBadge status={message.status} />
      </dd>
      <dt>To</dt>
      <dd>{message.phone ?? message.userId ?? '—'}</dd>
      <dt>Type</dt>
      <dd>{message.type}</dd>
      {children}
      {message.senderChanged ? <SenderChangedFacts change={message.senderChanged} /> : null}
      <dt>Channel</dt>
      <dd>{channelName(message.channel)}</dd>
      {message.fallback ? <FallbackFacts fallback={message.fallback} /> : null}
      <dt>Client reference</dt>
      <dd>{message.clientReference ?? '—'}</dd>
      <dt>Accepted</dt>
      <dd>
        <Time at={message.createdAt} />
      </dd>
      {message.lastError ? (
        <>
          <dt>Last error</dt>
          <dd>
            <ErrorCode code={message.lastError.code} message={message.lastError.message} />
          </dd>
        </>
      ) : null}
    </dl>
  )
}
