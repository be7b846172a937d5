import {
  DEFAULT_SENDER_ID,
  type MessageJob,
  QueueNames,
  redactPayload,
  senderQueueName,
  smsFallbackHoldKey,
  webhookEventBody,
  webhookJobId,
} from '@dispatch/contracts'
import {
  type DeliveryOutcome,
  erasedEventDeliveries,
  findRecordedDelivery,
  loggedEntries,
  parseOutcome,
  type RecipientIdentities,
} from '@dispatch/db'
import { legacyRecipientKeys, poolStickyKey, queuePrefix, serviceWindowKey } from '@dispatch/runtime'
import {
  fairKeys,
  MESSAGE_BUNDLE_JOB_NAME,
  type MessageBundleJob,
  messageClaimKey,
  messageClaimTtlMs,
  releaseMessageClaims,
} from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, Queue } from 'bullmq'
import type { WorkerContext } from '../runtime.ts'

/** What a message canceled by an erasure says, on its record and its `message.canceled` event. */
export const ERASED_CODE = 'RECIPIENT_ERASED'
const ERASED_MESSAGE = "Not sent: its recipient's data was erased before it went"
/** A record in one of these, found after the claim was taken for a cancel: not ended by a worker. */
const CANCELABLE: ReadonlySet<string> = new Set(['scheduled', 'queued', 'sending', 'canceled'])

/** The erasure's view of Redis: its connection, the layout, and each sender's queue opened once. */
export class RedisEraser {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #queues = new Map<string, Queue>()

  constructor(context: WorkerContext, redis: RedisClient) {
    this.#context = context
    this.#redis = redis
  }

  get #prefix() {
    return this.#context.config.QUEUE_PREFIX
  }

  queue(name: string): Queue {
    let queue = this.#queues.get(name)
    if (!queue) {
      queue = new Queue(name, { connection: this.#redis, prefix: queuePrefix(this.#context.config, name) })
      queue.on('error', (error) =>
        this.#context.logger.warn({ err: error, queue: name }, 'erasure queue error'),
      )
      this.#queues.set(name, queue)
    }
    return queue
  }

  async close() {
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => {})))
  }

  /**
   * Matching messages not yet handed to a worker (waiting for admission, scheduled, or admitted and
   * waiting in the sender's queue): each is claimed for a cancel, as `POST …/cancel` does, so no
   * worker sends it; recorded `canceled` (an erasure's: without its recipient or content); and its
   * job, which holds both, removed. One a worker already holds is counted in flight (the caller waits it out).
   */
  async cancelQueued(
    senders: Array<{ id: string; phoneNumberId: string }>,
    matches: (job: MessageJob) => boolean,
    record: (outcomes: DeliveryOutcome[]) => Promise<void>,
    /** The record of a canceled message: an erasure's (no recipient, no content) unless told. */
    outcomeOf: (
      job: MessageJob,
      sender: { id: string; phoneNumberId: string },
    ) => DeliveryOutcome = canceledOutcome,
  ): Promise<{ canceled: string[]; inFlight: number }> {
    const canceled: string[] = []
    let inFlight = 0
    for (const sender of senders) {
      const keys = fairKeys(this.#prefix, sender.id)
      // By message id: one being admitted can be in `moving` and already in the queue, and is one
      // message (recorded once: a statement may not write a row twice).
      const found = new Map<string, { job: MessageJob; bull?: Job; bundled?: boolean }>()
      for (const hash of [keys.jobs, keys.moving]) {
        let cursor = '0'
        do {
          const [next, entries] = await this.#redis.hscan(hash, cursor, 'COUNT', 1000)
          cursor = next
          for (let i = 1; i < entries.length; i += 2) {
            const job = JSON.parse(entries[i] as string) as MessageJob
            if (matches(job)) found.set(job.messageId, { job })
          }
        } while (cursor !== '0')
      }
      const queue = this.queue(senderQueueName(sender.id))
      for (const bull of await queue.getJobs(['wait', 'prioritized', 'delayed'])) {
        for (const job of messagesOf(bull)) {
          // A bundle's message (message-bundles.ts) leaves the bundle; the bundle stays for the rest.
          if (matches(job)) found.set(job.messageId, { job, bull, bundled: isBundle(bull) })
        }
      }
      for (const active of await queue.getJobs(['active']))
        inFlight += messagesOf(active).filter(matches).length
      const outcomes: DeliveryOutcome[] = []
      const removable: Array<{ job: MessageJob; bull?: Job; bundled?: boolean }> = []
      for (const entry of found.values()) {
        const { job } = entry
        const key = messageClaimKey(this.#prefix, job.messageId)
        const set = await this.#redis.set(
          key,
          'cancel',
          'PX',
          messageClaimTtlMs(job.expiresAt, Date.now()),
          'NX',
        )
        const holder = set === 'OK' ? 'cancel' : await this.#redis.get(key)
        if (holder !== 'cancel') {
          inFlight++
          continue
        }
        // Left in `moving` by an admitter that died, it may have been delivered since and its claim
        // released (message-claims.ts): then its record says how it ended, and the cancel gives way.
        if (set === 'OK' && (await this.#endedByWorker(job.messageId))) {
          await this.#redis.del(key)
          await this.#redis.multi().hdel(keys.moving, job.messageId).zrem(keys.movingAt, job.messageId).exec()
          continue
        }
        outcomes.push(outcomeOf(job, sender))
        removable.push(entry)
      }
      // Recorded before the jobs go: a crash between the two leaves a job a worker records canceled.
      await record(outcomes)
      const bundles = new Map<Job, Set<string>>()
      for (const { job, bull, bundled } of removable) {
        const pipeline = this.#redis.pipeline()
        pipeline.hdel(keys.jobs, job.messageId)
        pipeline.hdel(keys.moving, job.messageId)
        pipeline.zrem(keys.scheduled, job.messageId)
        pipeline.zrem(keys.movingAt, job.messageId)
        await pipeline.exec()
        if (bull && bundled) bundles.set(bull, (bundles.get(bull) ?? new Set()).add(job.messageId))
        else if (bull) await bull.remove().catch(() => inFlight++)
        canceled.push(job.messageId)
      }
      inFlight += await stripBundles(bundles)
    }
    return { canceled, inFlight }
  }

  /** The message's record says a worker ended it (sent or beyond, failed, expired). */
  async #endedByWorker(messageId: string): Promise<boolean> {
    const recorded = await findRecordedDelivery(this.#context.db, messageId)
    return recorded !== undefined && !CANCELABLE.has(recorded.status)
  }

  /**
   * Sent outcomes to the recipient still in a sender's sent log (docs/delivery.md, "Recording outcomes"):
   * not yet in Postgres, so no row yet for the erasure to clear, and the recorder or a sweep would
   * write one, with the recipient, after it. Each is written now and leaves the log, before the rows
   * are erased. A recorder that read one before it left may still write it, within milliseconds:
   * the count makes the erasure pass again. Answers how many were written.
   */
  async writeLoggedSent(
    senders: Array<{ id: string }>,
    matches: (recipient: RecipientOf) => boolean,
    record: (outcomes: DeliveryOutcome[]) => Promise<void>,
  ): Promise<number> {
    let written = 0
    for (const sender of senders) {
      const stream = fairKeys(this.#prefix, sender.id).sentLog
      const found: Array<{ id: string; outcome: DeliveryOutcome }> = []
      for await (const { id, json } of loggedEntries(this.#redis, stream)) {
        const outcome = parseOutcome(json)
        if (matches(outcome)) found.push({ id, outcome })
      }
      if (found.length === 0) continue
      await record(found.map((f) => f.outcome))
      await this.#redis.xdel(stream, ...found.map((f) => f.id))
      // Recorded here, not by a worker's recorder: their claims go as the recorder's would.
      await releaseMessageClaims(
        this.#redis,
        this.#prefix,
        found.map((f) => f.outcome.id),
        this.#context.config.MESSAGE_CLAIM_KEEP_MS,
      )
      written += found.length
    }
    return written
  }

  /**
   * The finished jobs of erased messages, which BullMQ keeps a while (a week once failed; a sent one
   * is removed as it completes, but one queued before that changed may stay a day; a week once
   * failed) with the message as it was accepted. Only messages recent enough to be kept are looked
   * up. Their channel fallback's timer or 131026 hold (fallback-timer.ts, the same id), which holds
   * the number and the SMS's text (a day at most, a week once failed), goes too: no SMS follows an
   * erasure. Answers how many were removed, and how many a worker still held.
   */
  async removeMessageJobs(messages: Array<{ id: string; senderId: string | null; acceptedAt: Date }>) {
    const keptSince = Date.now() - 8 * 24 * 3600 * 1000
    let removed = 0
    let held = 0
    const recent = messages.filter((m) => m.acceptedAt.getTime() >= keptSince)
    const timers = this.queue(QueueNames.smsFallbackTimers)
    const timersPrefix = queuePrefix(this.#context.config, QueueNames.smsFallbackTimers)
    const remove = async (queue: Queue, id: string) => {
      const job = await queue.getJob(id)
      if (!job) return
      await job.remove().then(
        () => removed++,
        () => held++,
      )
    }
    for (let i = 0; i < recent.length; i += 200) {
      await Promise.all(
        recent.slice(i, i + 200).map(async (m) => {
          await remove(this.queue(senderQueueName(m.senderId ?? DEFAULT_SENDER_ID)), m.id)
          await remove(timers, m.id)
          removed += await this.#redis.del(smsFallbackHoldKey(timersPrefix, m.id))
        }),
      )
    }
    return { removed, held }
  }

  /**
   * The webhook deliveries of erased events: one still to be delivered goes with the event as it now
   * is (without the recipient); a finished one, kept with the body it delivered, is removed. A
   * manual retry's or replay's job (a tagged id) is left to its retention (a day, a week failed).
   * A bundle needs nothing: it holds event ids, and reads the events when it delivers them.
   */
  async stripWebhookJobs(db: WorkerContext['db'], eventIds: string[]): Promise<number> {
    const deliveries = await erasedEventDeliveries(db, eventIds)
    const queue = this.queue(QueueNames.webhooks)
    let changed = 0
    for (const d of deliveries) {
      const job = await queue.getJob(webhookJobId(d.eventId, d.endpointId))
      if (!job) continue
      const state = await job.getState()
      if (state === 'completed' || state === 'failed') await job.remove().catch(() => {})
      else await job.updateData({ ...job.data, body: webhookEventBody(d.payload) })
      changed++
    }
    return changed
  }

  /** Jobs of the given ids in one queue (consent confirmations), removed unless a worker holds them. */
  async removeJobs(queueName: string, ids: string[]): Promise<number> {
    let removed = 0
    for (const id of ids) {
      const job = await this.queue(queueName).getJob(id)
      if (job)
        await job.remove().then(
          () => removed++,
          () => {},
        )
    }
    return removed
  }

  /**
   * Keys named after the recipient: its 24-hour window per business number (an admin's erasure: the
   * window is the number's, shared by every key), an opt-out or cap count keyed by the plain
   * recipient, left from before the copy was keyed by hash, and the sender pools' sticky records
   * (`poolStickyKey`): every pool's for an admin's erasure (pools since deleted included), the
   * key's own pool's for a key's (`pools`: 'all', or the key's pool id, or null for none).
   */
  async removeRecipientKeys(
    phoneNumberIds: string[],
    recipients: string[],
    windows: boolean,
    pools: 'all' | string | null,
  ): Promise<number> {
    const keys: string[] = []
    for (const number of phoneNumberIds) {
      for (const recipient of recipients) {
        keys.push(...legacyRecipientKeys(this.#prefix, number, recipient))
        if (windows) keys.push(serviceWindowKey(this.#prefix, number, recipient))
      }
    }
    if (pools === 'all') keys.push(...(await this.#stickyRecordsOf(recipients)))
    else if (pools)
      for (const recipient of recipients) keys.push(poolStickyKey(this.#prefix, pools, recipient))
    let removed = 0
    // One key per DEL: on a Cluster the keys sit on different slots.
    for (const key of keys) removed += await this.#redis.del(key)
    return removed
  }

  /** Every pool's sticky record of the recipients, found by one scan of each node. */
  async #stickyRecordsOf(recipients: string[]): Promise<string[]> {
    // `<prefix>:pool-sticky:`, then `<poolId>:<recipient>` (pool ids hold no `:`).
    const stem = poolStickyKey(this.#prefix, '', '').slice(0, -1)
    const wanted = new Set(recipients)
    const found: string[] = []
    for await (const keys of this.#scan(`${globEscape(stem)}*`)) {
      for (const key of keys) {
        const rest = key.slice(stem.length)
        if (wanted.has(rest.slice(rest.indexOf(':') + 1))) found.push(key)
      }
    }
    return found
  }

  /**
   * Idempotency answers (kept a day) that quote the recipient: rewritten with `null` in its place, so
   * a retry of the request still replays its answer (and sends nothing again). Only the key's own
   * answers for a key's erasure.
   */
  async rewriteIdempotencyAnswers(apiKeyId: string | null, recipients: string[]): Promise<number> {
    const match = `${this.#prefix}:idempotency:${apiKeyId ?? '*'}:*`
    const quoted = recipients.map((r) => JSON.stringify(r))
    let rewritten = 0
    for await (const keys of this.#scan(match)) {
      // A page's values in one round trip (one GET each: on a Cluster they sit on many slots).
      const pipeline = this.#redis.pipeline()
      for (const key of keys) pipeline.get(key)
      const values = keys.length ? ((await pipeline.exec()) ?? []) : []
      for (const [i, key] of keys.entries()) {
        const value = values[i]?.[1] as string | null | undefined
        if (!value) continue
        const stored = JSON.parse(value) as { body?: string }
        if (typeof stored.body !== 'string' || !quoted.some((q) => stored.body?.includes(q))) continue
        let body = stored.body
        for (const q of quoted) body = body.split(q).join('null')
        await this.#redis.set(key, JSON.stringify({ ...stored, body }), 'KEEPTTL')
        rewritten++
      }
    }
    return rewritten
  }

  /** The keys matching `pattern`, a SCAN page at a time, on every master of a Cluster (or the one server). */
  async *#scan(pattern: string): AsyncGenerator<string[]> {
    for (const node of this.#nodes()) {
      let cursor = '0'
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
        cursor = next
        yield keys
      } while (cursor !== '0')
    }
  }

  /** The servers to SCAN: each master of a Cluster, or the one server. */
  #nodes(): RedisClient[] {
    const redis = this.#redis as RedisClient & { nodes?: (role: string) => RedisClient[] }
    return redis.isCluster && redis.nodes ? redis.nodes('master') : [this.#redis]
  }
}

/** A queued message's record as an erasure cancels it: no recipient, no content, already redacted. */
function canceledOutcome(job: MessageJob, sender: { id: string; phoneNumberId: string }): DeliveryOutcome {
  return {
    id: job.messageId,
    apiKeyId: job.apiKeyId,
    type: job.message.type,
    phone: null,
    userId: null,
    payload: redactPayload(job.message.type, job.message.body, { recipient: false }),
    clientReference: job.clientReference ?? null,
    senderPhoneNumberId: sender.phoneNumberId,
    senderId: job.senderId ?? sender.id,
    batchId: job.batchId ?? null,
    acceptedAt: new Date(job.acceptedAt),
    sendAt: job.sendAt ? new Date(job.sendAt) : null,
    heldForQuietHours: job.scheduledReason === 'quiet_hours',
    expiresAt: job.expiresAt ? new Date(job.expiresAt) : null,
    status: 'canceled',
    attempts: 0,
    platformMessageId: null,
    lastErrorCode: ERASED_CODE,
    lastErrorMessage: ERASED_MESSAGE,
    at: new Date(),
  }
}

const isBundle = (job: Job | undefined) => job?.name === MESSAGE_BUNDLE_JOB_NAME

/** The messages a queued job holds: its own, or a bundle's. */
function messagesOf(job: Job | undefined): MessageJob[] {
  if (!job) return []
  return isBundle(job) ? ((job.data as MessageBundleJob).messages ?? []) : [job.data as MessageJob]
}

/**
 * Takes erased messages out of the bundles that hold them (their claims already `cancel`): a
 * bundle left empty is removed. Answers how many of them a worker may hold (the bundle was taken
 * meanwhile, with the messages in hand): the erasure passes again once it is done.
 */
async function stripBundles(bundles: Map<Job, Set<string>>): Promise<number> {
  let held = 0
  for (const [bundle, ids] of bundles) {
    const rest = messagesOf(bundle).filter((m) => !ids.has(m.messageId))
    if (rest.length === 0) await bundle.remove().catch(() => {})
    else await bundle.updateData({ messages: rest }).catch(() => {})
    if (await bundle.isActive().catch(() => true)) held += ids.size
  }
  return held
}

/** Who a queued message or a logged outcome goes to, and whose it is. */
type RecipientOf = { apiKeyId: string; phone?: string | null; userId?: string | null }

/** Whether a message goes to the recipient (and, for a key's erasure, is the key's). */
export const recipientMatcher =
  (ids: RecipientIdentities, apiKeyId: string | null) =>
  (message: RecipientOf): boolean => {
    if (apiKeyId !== null && message.apiKeyId !== apiKeyId) return false
    const { phone, userId } = message
    return (
      (typeof phone === 'string' && ids.phones.includes(phone)) ||
      (typeof userId === 'string' && ids.userIds.includes(userId))
    )
  }

/** Whether a queued message goes to the recipient (and, for a key's erasure, is the key's). */
export const jobMatcher = (ids: RecipientIdentities, apiKeyId: string | null) => {
  const matches = recipientMatcher(ids, apiKeyId)
  return (job: MessageJob): boolean => {
    const body = job.message.body as { phone?: string; userId?: string }
    return matches({ apiKeyId: job.apiKeyId, phone: body.phone, userId: body.userId })
  }
}

/** `text` matched literally by a SCAN MATCH pattern. */
const globEscape = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
