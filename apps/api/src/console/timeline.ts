import {
  AdminMessageIdParams,
  AdminMessageTimeline,
  errorMeaning,
  MessageIdParams,
  MessageTimeline,
  type TimelineEntry,
} from '@dispatch/contracts'
import {
  findMessageById,
  isUuid,
  type MessageHistory,
  type MessageRow,
  messageHistory,
  owned,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../errors.ts'
import { toAdminMessageView } from '../routes/admin/messages.ts'
import { findOwnMessage, viewFromJob } from '../routes/messages/lookup.ts'
import type { MessageRouteOptions } from '../routes/messages/send.ts'
import { errorResponses } from '../routes/responses.ts'
import { callerOf } from '../routes/third-party/tenancy.ts'
import { toMessageView } from '../views.ts'

const iso = (date: Date) => date.toISOString()
const withMeaning = (code: string, message: string | null) => {
  const meaning = errorMeaning(code)
  return `${code}${message ? `: ${message}` : ''}${meaning && meaning !== message ? ` (${meaning})` : ''}`
}

/** How every message's life starts: accepted, and scheduled when it waits for a time. */
function openingEntries(acceptedAt: string, sendAt: string | null, quietHours: boolean): TimelineEntry[] {
  const entries: TimelineEntry[] = [{ at: acceptedAt, kind: 'accepted', summary: 'Accepted (202)' }]
  if (sendAt) {
    const why = quietHours ? ' (the recipient’s quiet hours)' : ''
    entries.push({ at: acceptedAt, kind: 'scheduled', summary: `Scheduled for ${sendAt}${why}` })
  }
  return entries
}

/**
 * A message's whole life, oldest first: accepted, scheduled, each attempt that met an error, sent,
 * delivered, read or its end, each admin retry, and each webhook event with its delivery attempts.
 * Built from the message's record and what was written beside it; nothing here is recomputed.
 */
export function timelineOf(row: MessageRow, history: MessageHistory): TimelineEntry[] {
  const entries = openingEntries(iso(row.acceptedAt), row.sendAt && iso(row.sendAt), row.heldForQuietHours)
  for (const attempt of history.attempts) {
    // A final outcome's own entry below says how it ended; its attempt says why.
    entries.push({
      at: iso(attempt.createdAt),
      kind: 'attempt_failed',
      summary: `Attempt ${attempt.attempt} failed: ${withMeaning(attempt.errorCode, attempt.errorMessage)}`,
      errorCode: attempt.errorCode,
      attempt: attempt.attempt,
    })
  }
  for (const retry of history.retries) {
    entries.push({ at: iso(retry.createdAt), kind: 'retried', summary: `Retried by admin ${retry.actor}` })
  }
  const ends: Array<[Date | null, TimelineEntry['kind'], string]> = [
    [
      row.sentAt,
      'sent',
      `Sent${row.platformMessageId ? ` (${row.platformMessageId})` : ''}${row.fallbackUsed ? ', as its fallback template' : ''}`,
    ],
    [row.deliveredAt, 'delivered', 'Delivered to the phone'],
    [row.readAt, 'read', 'Read by the recipient'],
    [
      row.failedAt,
      'failed',
      `Failed${row.lastErrorCode ? `: ${withMeaning(row.lastErrorCode, row.lastErrorMessage)}` : ''}`,
    ],
    [row.expiredAt, 'expired', 'Expired: not handed to the platform within its validity'],
    [row.canceledAt, 'canceled', `Canceled${row.lastErrorCode ? ` (${row.lastErrorCode})` : ''}`],
  ]
  for (const [at, kind, summary] of ends) {
    if (at)
      entries.push({
        at: iso(at),
        kind,
        summary,
        ...(kind === 'failed' && row.lastErrorCode ? { errorCode: row.lastErrorCode } : {}),
      })
  }
  for (const event of history.events) {
    entries.push({
      at: iso(event.createdAt),
      kind: 'webhook_event',
      summary: `Event ${event.type}`,
      eventId: event.id,
    })
  }
  for (const delivery of history.deliveries) {
    const outcome =
      delivery.statusCode !== null && delivery.statusCode >= 200 && delivery.statusCode < 300
        ? `answered ${delivery.statusCode}`
        : `failed: ${delivery.error ?? `answered ${delivery.statusCode}`}`
    entries.push({
      at: iso(delivery.createdAt),
      kind: 'webhook_attempt',
      summary: `Webhook to ${delivery.url}, attempt ${delivery.attempt}, ${outcome} in ${delivery.durationMs} ms`,
      eventId: delivery.eventId,
      endpointId: delivery.endpointId,
      statusCode: delivery.statusCode,
    })
  }
  // Stable: entries of one instant keep the order they were added in (the order things happen).
  return entries
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => Date.parse(a.entry.at) - Date.parse(b.entry.at) || a.index - b.index)
    .map(({ entry }) => entry)
}

const notFound = () => new AppError('NOT_FOUND', 'Message not found')

/** `GET /api/admin/messages/:id/timeline`: any key's message. */
export const adminTimelineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.addHook('onRequest', app.requireAdmin)
  app.get(
    '/:id/timeline',
    {
      schema: {
        operationId: 'getAdminMessageTimeline',
        tags: ['admin'],
        summary: 'A message and its whole life on one timeline, for any key',
        description:
          'Oldest first: accepted, scheduled, each delivery attempt that met an error, sent, delivered, read ' +
          '(or failed, expired, canceled), each admin retry, and each webhook event with its delivery attempts. ' +
          'A message not yet recorded by a worker is 404 here for a moment.',
        security: [{ adminToken: [] }],
        params: AdminMessageIdParams,
        response: { 200: AdminMessageTimeline, ...errorResponses('ADMIN_AUTH_REQUIRED', 'NOT_FOUND') },
      },
    },
    async (request) => {
      if (!isUuid(request.params.id)) throw notFound()
      const row = await findMessageById(db, request.params.id.toLowerCase())
      if (!row) throw notFound()
      return { message: toAdminMessageView(row), entries: timelineOf(row, await messageHistory(db, row.id)) }
    },
  )
}

/** `GET /api/third-party/messages/:messageId/timeline`: the key's own message only. */
export const messageTimelineRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  app.get(
    '/:messageId/timeline',
    {
      onRequest: app.requireApiKey('read:messages'),
      schema: {
        operationId: 'getMessageTimeline',
        hide: options.hide,
        tags: ['messages'],
        summary: 'A message and its whole life on one timeline',
        description:
          'Requires the `read:messages` scope; a key sees only its own messages. Oldest first: accepted, ' +
          'scheduled, each delivery attempt that met an error, sent, delivered, read (or failed, expired, ' +
          'canceled), and each webhook event with its delivery attempts to the key’s endpoints.',
        security: [{ apiKey: [] }],
        params: MessageIdParams,
        response: {
          200: MessageTimeline,
          ...errorResponses(
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'INSUFFICIENT_SCOPE',
            'NOT_FOUND',
          ),
        },
      },
    },
    async (request) => {
      const found = await findOwnMessage(app.deps, request.apiKey, request.params.messageId, request.log)
      if ('row' in found) {
        const history = await owned(app.deps.db, callerOf(request)).messages.history(found.row)
        // The admins' retries name an admin: the key sees that it was retried, not by whom.
        const entries = timelineOf(found.row, history).map((entry) =>
          entry.kind === 'retried' ? { ...entry, summary: 'Retried by an admin' } : entry,
        )
        return { message: toMessageView(found.row), entries }
      }
      // Not recorded yet: what Redis knows is how it started.
      const view = viewFromJob(found.job, found.state, found.claim)
      const entries = openingEntries(view.createdAt, view.sendAt, view.scheduledReason === 'quiet_hours')
      return { message: view, entries }
    },
  )
}
