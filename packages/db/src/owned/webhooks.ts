import type { WebhookAttemptListQuery, WebhookEndpointListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import {
  deleteWebhookEndpoint,
  findWebhookEndpoint,
  insertWebhookEndpointWithin,
  listWebhookEndpoints,
  type NewWebhookEndpoint,
  rotateWebhookEndpointSecret,
  updateWebhookEndpoint,
  type WebhookEndpointChanges,
} from '../queries/webhook-endpoints.ts'
import {
  findWebhookEvent,
  insertExampleWebhookEvent,
  listWebhookAttempts,
  webhookEventsBetween,
} from '../queries/webhook-events.ts'
import type { WebhookEndpointRow } from '../schema/webhook-endpoints.ts'
import type { Caller } from './caller.ts'

/**
 * A key's webhook endpoints and their deliveries: made in its name, and every read and change of
 * its own only (another key's endpoint or event does not exist for it). Attempts are read through
 * an endpoint found here first.
 */
export function ownedWebhooks(db: Db, caller: Caller) {
  const key = caller.apiKeyId
  return {
    /** Made unless the key already has `max` endpoints (then `undefined`). */
    create: (input: Omit<NewWebhookEndpoint, 'apiKeyId'>, max: number) =>
      insertWebhookEndpointWithin(db, { ...input, apiKeyId: key }, max),
    find: (id: string) => findWebhookEndpoint(db, key, id),
    list: (query: WebhookEndpointListQuery) => listWebhookEndpoints(db, key, query),
    update: (id: string, changes: WebhookEndpointChanges, now: Date) =>
      updateWebhookEndpoint(db, key, id, changes, now),
    remove: (id: string) => deleteWebhookEndpoint(db, key, id),
    rotateSecret: (id: string, sealedSecret: string, previousExpiresAt: Date, now: Date) =>
      rotateWebhookEndpointSecret(db, key, id, sealedSecret, previousExpiresAt, now),
    /** An endpoint's attempts: one `find` answered (another key's has none, as if absent). */
    attempts: (endpoint: WebhookEndpointRow, query: WebhookAttemptListQuery) =>
      endpoint.apiKeyId === key
        ? listWebhookAttempts(db, endpoint.id, query)
        : Promise.resolve({ rows: [], itemCount: 0 }),
    event: (eventId: string) => findWebhookEvent(db, key, eventId),
    /** An example event to one of the key's endpoints (another key's is refused, as if absent). */
    sendExample: (endpoint: WebhookEndpointRow, type: string, payload: unknown, at: Date) =>
      endpoint.apiKeyId === key
        ? insertExampleWebhookEvent(db, { apiKeyId: key, endpointId: endpoint.id, type, payload, at })
        : Promise.resolve(undefined),
    eventsBetween: (input: Omit<Parameters<typeof webhookEventsBetween>[1], 'apiKeyId'>) =>
      webhookEventsBetween(db, { ...input, apiKeyId: key }),
  }
}
