import type { ComponentChildren } from 'preact'
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
  /** Its channel fallback, once decided (docs/failover.md). */
  channel?: 'whatsapp' | 'sms'
  fallback?: {
    reason: string
    state: string
    status: string | null
    price?: { amount: string; currency: string }
  }
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
      {message.fallback ? (
        <>
          <dt>Channel</dt>
          <dd>
            {message.channel ?? 'whatsapp'}: SMS fallback {message.fallback.state} ({message.fallback.reason}
            {message.fallback.status ? `; SMS ${message.fallback.status}` : ''}
            {message.fallback.price
              ? `; ${message.fallback.price.amount} ${message.fallback.price.currency}`
              : ''}
            )
          </dd>
        </>
      ) : null}
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
            <code>{message.lastError.code}</code> {message.lastError.message}
          </dd>
        </>
      ) : null}
    </dl>
  )
}
