import type { RedisClient } from '@dispatch/runtime/redis'
import type { DeliveryOutcome } from './queries/message-deliveries.ts'

/**
 * Reading a sender's sent log (apps/worker/src/messages/sent-log.ts writes it): a Redis stream of
 * `sent` outcomes not yet in Postgres, one JSON outcome per entry (field `o`). Read by the worker
 * (a job run again, the sweep, an erasure) and by the API (a finished bundle's message whose row
 * has not landed).
 */
const PAGE = 1000
const DATES = ['acceptedAt', 'sendAt', 'expiresAt', 'redactAfter', 'at'] as const

/** An outcome as logged, its dates made dates again. */
export function parseOutcome(json: string): DeliveryOutcome {
  const outcome = JSON.parse(json) as Record<string, unknown>
  for (const field of DATES) {
    const value = outcome[field]
    if (typeof value === 'string') outcome[field] = new Date(value)
  }
  return outcome as unknown as DeliveryOutcome
}

type Entries = Array<[id: string, fields: string[]]>

/** A log's entries, oldest first, a page at a time: the entry's id and its outcome as logged. */
export async function* loggedEntries(
  redis: RedisClient,
  stream: string,
): AsyncGenerator<{ id: string; json: string }> {
  let start = '-'
  for (;;) {
    const entries = (await redis.xrange(stream, start, '+', 'COUNT', PAGE)) as Entries
    for (const [id, fields] of entries) yield { id, json: fields[1] ?? '' }
    if (entries.length < PAGE) return
    start = `(${entries[entries.length - 1]?.[0]}`
  }
}

/** A message's sent outcome still waiting in the log, if any. */
export async function findLoggedSent(
  redis: RedisClient,
  stream: string,
  messageId: string,
): Promise<DeliveryOutcome | undefined> {
  for await (const { json } of loggedEntries(redis, stream)) {
    if (!json.includes(messageId)) continue
    const outcome = parseOutcome(json)
    if (outcome.id === messageId) return outcome
  }
  return undefined
}
