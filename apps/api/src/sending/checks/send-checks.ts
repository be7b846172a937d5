import {
  DEFAULT_SENDER_ID,
  type FallbackTemplate,
  type MessageFallback,
  type MessageType,
  recipientField,
  recipientOf,
} from '@dispatch/contracts'
import {
  listsNumber,
  MARKETING_CONSENT_SCRIPT,
  marketingCountKey,
  optOutNumbersKey,
  type RecipientHasher,
  SERVICE_WINDOW_MS,
  type SuppressionOwner,
  scopeForOwner,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
  suppressionKey,
  suppressionsLoadedKey,
  widerScope,
} from '@dispatch/runtime'
import { scriptCall } from '@dispatch/runtime/lua-scripts'
import {
  type RedisClient,
  type Settle,
  type TurnBatched,
  turnBatched,
  turnBatchedGet,
} from '@dispatch/runtime/redis'
import { AppError } from '../../errors.ts'
import type { Log } from '../log.ts'
import type { StickyRead } from '../pools/sticky.ts'
import { checkTemplate } from './check-template.ts'
import { KnownReaches } from './known-reach.ts'
import {
  checkMessagingLimit,
  type LimitCheckDeps,
  type PrefetchedLimit,
  prefetchLimit,
} from './messaging-limit.ts'
import type { SenderRules } from './send-rules.ts'
import { templateKey } from './send-rules.ts'
import type { SendRulesCache } from './send-rules-cache.ts'

/** One send as the checks read it: its type, its validated body, and its field in the request. */
export interface SendToCheck {
  type: MessageType
  body: {
    phone?: string | undefined
    userId?: string | undefined
    templateId?: string
    language?: string
    fallbackTemplate?: FallbackTemplate | undefined
    /** A template send's own category, for a template the catalog does not know. */
    category?: string | undefined
  } & Partial<FallbackTemplate>
  /** `body` for a single send, `body.messages[3]` in a batch. */
  field: string
}

/**
 * A single send's reads started early, before the request's other steps (see
 * `SendChecks.prefetch`): each the value, or undefined when the read failed.
 */
export interface Prefetched {
  /** The recipient: a phone, or a BSUID. */
  recipient: string
  /** Its window, under `enforce`. */
  window?: Promise<string | null | undefined>
  /**
   * Its suppression entry (the recipient's own and the key's owner's, one value: `scopeForOwner`)
   * as the scope that blocks it, from the number and for the owner it was read for (a send not
   * counted under a cap).
   */
  consent?: { number: string; owner: SuppressionOwner; read: Promise<string | null | undefined> }
  /** A template's window and its portfolio's reach, under `messagingLimitPolicy: refuse`. */
  limit?: PrefetchedLimit
  /**
   * A template's window under a counted messaging limit, for its job (`windowClosesAt`): when it
   * closes, set once read (absent: not read yet, or the read failed). Read in the MGET of the
   * send's other early reads, which the checks wait for: no wait of its own.
   */
  limitWindow?: { closesAt?: number }
  /**
   * A pooled key's send: its recipient's sticky record, and the number the reads above were made
   * for (the spread's: the checks use them only when it is the number chosen).
   */
  sticky?: StickyRead
  senderId?: string
  /** A pooled key's pool's numbers, as `prefetch` was given them (`check`'s `poolNumbers`). */
  poolNumbers?: readonly string[]
  /** A pooled send's entries on its pool's other numbers, read with the rest. */
  elsewhere?: OptOutsElsewhere
}

/**
 * A request's marketing messages under its sender's cap: their keys in pairs, the cap (count, ms),
 * and each message's owner, whose entries block it beside the recipient's own.
 */
interface MarketingCall {
  keys: string[]
  args: [number, number]
  owners: string[]
}

/**
 * When a window whose last inbound message was at `last` closes (0: none), or undefined when it
 * was not read.
 */
const closingOf = (last: string | null | undefined): number | undefined => {
  if (last === undefined) return undefined
  if (last === null) return 0
  const at = Number(last)
  return Number.isFinite(at) && at > 0 ? at + SERVICE_WINDOW_MS : 0
}

const unread = () => undefined

/** How long a read of a Redis copy's completeness marker stands. */
const MARKER_TTL_MS = 1000

/**
 * A Redis copy's completeness marker (set once a worker's rebuild is done), read at most once per
 * MARKER_TTL_MS in the turn's MGET: it changes only when Redis loses its data.
 */
class MarkerRead {
  readonly #read: TurnBatched<string, string | null>
  readonly #key: string
  #value: string | null = null
  #until = 0

  constructor(read: TurnBatched<string, string | null>, key: string) {
    this.#read = read
    this.#key = key
  }

  /** The marker, read again (and waited for) once the last read is stale. Rejects when Redis fails. */
  read(now: number): Promise<string | null> {
    if (now < this.#until) return Promise.resolve(this.#value)
    return this.#read(this.#key).then((value) => {
      this.#value = value
      this.#until = now + MARKER_TTL_MS
      return value
    })
  }

  /**
   * Whether the marker was set at the last read, without waiting: a stale read starts a new one,
   * whose answer a later call gets (not set until the first lands, nor after a failed read).
   */
  wasSet(now: number): boolean {
    if (now >= this.#until) {
      this.#until = now + MARKER_TTL_MS
      this.#read(this.#key).then(
        (value) => {
          this.#value = value
        },
        () => {
          this.#value = null
        },
      )
    }
    return this.#value !== null
  }
}

const outsideWindow = (field: string, body: SendToCheck['body']) =>
  new AppError(
    'OUTSIDE_SERVICE_WINDOW',
    `${recipientField(body, field)}: the 24-hour customer-service window with ${recipientOf(body)} is closed (no message from them in ` +
      'the last 24 hours): send a template, or give this message a fallbackTemplate',
  )

/**
 * What Dispatch knows a send would fail on, checked before anything is queued: a template the
 * sender's catalog does not have approved with these variables (in memory), and, under the
 * sender's `enforce` policy, a free-form message to a recipient whose window is closed (Redis: all
 * of a request's windows in one round trip). Answers each send's error, or undefined.
 */
export class SendChecks {
  readonly #rules: SendRulesCache
  readonly #redis: RedisClient
  readonly #read: TurnBatched<string, string | null>
  readonly #prefix: string
  readonly #log: Log
  /** The recipient's hash, which the suppression list's copy and the cap's counts are keyed by. */
  readonly #hash: RecipientHasher
  /** The windows' completeness marker. */
  readonly #windowsLoaded: MarkerRead
  /** The suppression copy's marker: its recipients' lists of numbers are complete. */
  readonly #suppressionsLoaded: MarkerRead

  /** The environment's own sender's number: what `default` sends from before it has a rules row. */
  readonly #defaultNumber: string
  /**
   * `MARKETING_CONSENT_SCRIPT`: per pair of keys, the entry's scope, or 1 (counted) / 0 (over the
   * cap). On a single server one call per cap for the marketing messages of every request of a
   * turn; on a Cluster the call as made (one message's keys: a slot of their own).
   */
  readonly #countMarketing: (call: MarketingCall) => Promise<unknown[]>

  constructor(
    rules: SendRulesCache,
    redis: RedisClient,
    prefix: string,
    log: Log,
    defaultNumber: string,
    hash: RecipientHasher,
    /** The turn's batched reads, shared with the pools' sticky reads (one MGET for both). */
    read: TurnBatched<string, string | null> = turnBatchedGet(redis),
  ) {
    this.#hash = hash
    this.#rules = rules
    this.#defaultNumber = defaultNumber
    this.#redis = redis
    this.#prefix = prefix
    this.#log = log
    // Keys counted per call (in pairs, as many as the request has marketing messages).
    const script = scriptCall(redis, MARKETING_CONSENT_SCRIPT)
    const count = async ({ keys, args, owners }: MarketingCall) =>
      (await script(keys.length, ...keys, ...args, ...owners)) as unknown[]
    this.#countMarketing = redis.isCluster
      ? count
      : turnBatched(async (calls: MarketingCall[]) => {
          const answers = new Map<MarketingCall, unknown[]>()
          await Promise.all(
            [...Map.groupBy(calls, (call) => call.args.join(' ')).values()].map(async (group) => {
              const replies = await count({
                keys: group.flatMap((call) => call.keys),
                args: (group[0] as MarketingCall).args,
                owners: group.flatMap((call) => call.owners),
              })
              let at = 0
              for (const call of group) {
                answers.set(call, replies.slice(at, at + call.keys.length / 2))
                at += call.keys.length / 2
              }
            }),
          )
          return calls.map((call) => answers.get(call) ?? [])
        })
    // The suppression entries and windows every request of a turn reads, in one MGET (on a
    // Cluster, one GET each: they sit on many slots).
    this.#read = read
    this.#windowsLoaded = new MarkerRead(read, serviceWindowsLoadedKey(prefix))
    this.#suppressionsLoaded = new MarkerRead(read, suppressionsLoadedKey(prefix))
    this.#limitDeps = {
      redis,
      read: this.#read,
      prefix,
      hash,
      log,
      marker: (now) => this.#windowsLoaded.read(now),
      reaches: new KnownReaches(),
    }
  }

  /** What the messaging limit's reads use (messaging-limit.ts). */
  readonly #limitDeps: LimitCheckDeps

  /**
   * Starts a single send's reads before the request's other steps (the idempotency claim, the rate
   * limit), so their round trip overlaps the limit's instead of following it; `check` then takes
   * them: its window under `enforce`, and its suppression entry unless it is a marketing template
   * under a cap (that one is counted by a script, only once every other check has passed).
   * Undefined when there is nothing to read. Never rejects (a failed read is unknown). `owner`: the
   * sending key's (`suppressionOwner`), whose own entries block it beside the recipient's.
   */
  prefetch(
    senderId: string,
    body: unknown,
    type: MessageType,
    owner: SuppressionOwner,
    /** A pooled key's pool's numbers: its entries on the others are read too. */
    poolNumbers?: readonly string[],
  ): Prefetched | undefined {
    const rules = this.#rules.get(senderId)
    const send = body as SendToCheck['body'] | undefined
    if (!send) return undefined
    const recipient = recipientOf(send)
    if (typeof recipient !== 'string') return undefined
    const prefetched: Prefetched = { recipient }
    if (rules?.serviceWindowPolicy === 'enforce' && type !== 'template' && !send.fallbackTemplate) {
      const read = this.#read(serviceWindowKey(this.#prefix, rules.phoneNumberId, recipient))
      prefetched.window = read.catch(() => undefined)
    }
    const number = this.#numberOf(senderId, rules)
    const others = poolNumbers && this.#elsewhereFor(poolNumbers, number)
    const hashed = number !== undefined || others?.length ? this.#hash(recipient) : ''
    // A pooled send's entries on every number of its pool, through the one list of numbers its
    // recipient has entries on (none, for nearly every recipient); a pool of one reads its entry.
    const listed = others?.length ? this.#listed(hashed) : undefined
    if (
      number !== undefined &&
      !(rules?.marketingCap && isMarketing(rules, { type, body: send, field: '' }))
    ) {
      // Unlisted (nearly every recipient): no entry, and no promise more than the list's.
      const read = listed
        ? listed.then(
            (list) =>
              listsNumber(list, number) ? this.#readEntries(number, hashed, owner).catch(unread) : null,
            unread,
          )
        : this.#readEntries(number, hashed, owner).catch(unread)
      prefetched.consent = { number, owner, read }
    }
    if (poolNumbers) prefetched.poolNumbers = poolNumbers
    if (others?.length) prefetched.elsewhere = this.#readElsewhere(others, recipient, hashed, owner, listed)
    const limit = prefetchLimit(this.#limitDeps, rules, type, recipient, Date.now())
    if (limit) prefetched.limit = limit
    if (type === 'template' && rules?.messagingLimit.tracked && !this.#redis.isCluster) {
      const limitWindow: { closesAt?: number } = {}
      this.#read(serviceWindowKey(this.#prefix, rules.phoneNumberId, recipient)).then((last) => {
        const closesAt = closingOf(last)
        if (closesAt !== undefined) limitWindow.closesAt = closesAt
      }, unread)
      prefetched.limitWindow = limitWindow
    }
    return prefetched.window ||
      prefetched.consent ||
      prefetched.limit ||
      prefetched.limitWindow ||
      prefetched.elsewhere
      ? prefetched
      : undefined
  }

  /**
   * Under a counted messaging limit (a finite one, `hold` or `refuse`), when each template's
   * recipient's window closes (epoch ms; 0: closed, or none), read in the turn's MGET beside the
   * checks' other reads: its job carries it (`windowClosesAt`), so delivery soon after counts it
   * without reading the window again (reach-beside-claim.ts). Undefined for a sender whose limit is
   * not counted, and on a Cluster (delivery reads it there); undefined for a send that is not a
   * template, or whose window was not read (Redis failed: delivery reads it). Never rejects. A
   * single send's is read early instead (`Prefetched.limitWindow`).
   */
  windowsClosing(senderId: string, sends: SendToCheck[]): Promise<Array<number | undefined>> | undefined {
    const rules = this.#rules.get(senderId)
    // On a Cluster delivery reads the window beside the claim anyway (reach-beside-claim.ts).
    if (!rules?.messagingLimit.tracked || this.#redis.isCluster) return undefined
    return Promise.all(
      sends.map((send) =>
        send.type === 'template'
          ? this.#read(serviceWindowKey(this.#prefix, rules.phoneNumberId, recipientOf(send.body))).then(
              closingOf,
              unread,
            )
          : undefined,
      ),
    )
  }

  /**
   * A recipient's entry as one key reads it, in the turn's MGET: one value holds the recipient's
   * own scope and every owner's (`scopeForOwner`), so the key's owner's costs no key more.
   */
  #readEntries(number: string, hashed: string, owner: SuppressionOwner): Promise<string | null> {
    return this.#read(suppressionKey(this.#prefix, number, hashed)).then((value) =>
      scopeForOwner(value, owner),
    )
  }

  /**
   * A recipient's entries on `numbers` (a pooled send's pool's other numbers), in the turn's MGET,
   * taken as they land: the widest scope any of them blocks `owner` with. Once the copy's marker
   * says its lists are complete, the recipient's list of numbers first (`listed`), then the entries
   * of the numbers it lists only.
   */
  #readElsewhere(
    numbers: readonly string[],
    recipient: string,
    hashed: string,
    owner: SuppressionOwner,
    /** The recipient's list of numbers being read (`#listed`), or undefined: every number's entry. */
    listed: Promise<string | null> | undefined,
  ): OptOutsElsewhere {
    if (!listed) {
      const reads = new OptOutsElsewhere(numbers, recipient, owner, numbers.length)
      for (const number of numbers) this.#read.into(suppressionKey(this.#prefix, number, hashed), reads)
      return reads
    }
    const reads = new OptOutsElsewhere(numbers, recipient, owner, 1)
    listed.then(
      (list) => {
        const on = list ? numbers.filter((number) => listsNumber(list, number)) : NONE
        reads.expect(on.length)
        for (const number of on) this.#read.into(suppressionKey(this.#prefix, number, hashed), reads)
      },
      () => reads.reject(),
    )
    return reads
  }

  /**
   * The numbers the recipient has entries on (`optOutNumbersKey`), in the turn's MGET; undefined
   * while the copy's marker is not known to be set (then every number's entry is read).
   */
  #listed(hashed: string): Promise<string | null> | undefined {
    return this.#suppressionsLoaded.wasSet(Date.now())
      ? this.#read(optOutNumbersKey(this.#prefix, hashed))
      : undefined
  }

  /**
   * A pooled key's pool's numbers but `number`, the one a send goes through: whose entries block it
   * too. Worked out once per pool load and number (`poolNumbers` is the loaded pool's own list).
   */
  #elsewhereFor(poolNumbers: readonly string[], number: string | undefined): readonly string[] {
    if (poolNumbers.length === 1 && poolNumbers[0] === number) return NONE
    let byNumber = this.#elsewhere.get(poolNumbers)
    if (!byNumber) {
      byNumber = new Map()
      this.#elsewhere.set(poolNumbers, byNumber)
    }
    let others = byNumber.get(number)
    if (!others) {
      others = poolNumbers.filter((other) => other !== number)
      byNumber.set(number, others)
    }
    return others
  }

  /** `#elsewhereFor`'s answers, by the pool's list of numbers (a new one each load) and number. */
  readonly #elsewhere = new WeakMap<readonly string[], Map<string | undefined, readonly string[]>>()

  /**
   * The sends of `group` no entry on another number of the pool blocks, once those entries are in:
   * the others are answered unread here (null), so only the pool's entry refuses them.
   */
  async #notBlockedElsewhere(
    group: number[],
    elsewhere: Array<[number, OptOutsElsewhere]>,
    answers: Map<number, unknown>,
  ): Promise<number[]> {
    const reads = new Map(elsewhere)
    const out = group.flatMap((i) => reads.get(i)?.settled() ?? [])
    if (out.length) await Promise.all(out)
    return group.filter((i) => {
      const blocked = reads.get(i)?.widest
      if (blocked) answers.set(i, null)
      return !blocked
    })
  }

  /** The number a sender sends from: its rules', or the environment's for `default` before it has any. */
  #numberOf(senderId: string, rules: SenderRules | undefined): string | undefined {
    return rules?.phoneNumberId ?? (senderId === DEFAULT_SENDER_ID ? this.#defaultNumber : undefined)
  }

  async check(
    senderId: string,
    sends: SendToCheck[],
    now = Date.now(),
    prefetched?: Prefetched,
    owner: SuppressionOwner = '',
    /** The sends wait for room under the messaging limit whatever the sender's policy (a campaign's). */
    holdAtLimit = false,
    /** A pooled key's pool's numbers: its sends are blocked by entries on any (docs/consent.md, "Sender pools"). */
    poolNumbers?: readonly string[],
  ): Promise<Array<AppError | undefined>> {
    const rules = this.#rules.get(senderId)
    const errors: Array<AppError | undefined> = sends.map(() => undefined)
    const windows: number[] = []
    sends.forEach((send, i) => {
      try {
        if (send.type === 'template') {
          checkTemplate(rules, send.body as FallbackTemplate, send.field)
          return
        }
        const { fallbackTemplate } = send.body
        if (fallbackTemplate) checkTemplate(rules, fallbackTemplate, `${send.field}.fallbackTemplate`)
        // With a fallback, a closed window is the worker's to handle: it sends the template instead.
        else if (rules?.serviceWindowPolicy === 'enforce') windows.push(i)
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        errors[i] = error
      }
    })
    // Read beside the windows, not before them: one round trip for both.
    const number = this.#numberOf(senderId, rules)
    const consentChecked =
      number === undefined
        ? Promise.resolve()
        : this.#checkConsent(
            number,
            owner,
            rules,
            sends,
            errors,
            prefetched,
            poolNumbers && this.#elsewhereFor(poolNumbers, number),
          )
    // The portfolio's reach under `refuse`, in the same turn (no reads at all for another policy,
    // nor while the reach read less than a second ago leaves room).
    const limitChecked =
      rules?.messagingLimit.policy === 'refuse' && !holdAtLimit
        ? checkMessagingLimit(this.#limitDeps, rules, sends, errors, now, prefetched?.limit)
        : undefined
    const consent = limitChecked ? Promise.all([consentChecked, limitChecked]) : consentChecked
    if (!rules) {
      await consent
      return errors
    }
    if (windows.length === 0) {
      await consent
      return errors
    }
    // The marker changes only when Redis loses its data (then a worker rebuilds it): read once a
    // second, not per send (`#windowsLoaded`), so a send under `enforce` costs one read, pipelined with the
    // request's others.
    let loaded: string | null
    let answers: Array<string | null>
    try {
      ;[loaded, ...answers] = await Promise.all([
        this.#windowsLoaded.read(now),
        ...windows.map((i) => {
          const recipient = recipientOf((sends[i] as SendToCheck).body)
          if (prefetched?.window && prefetched.recipient === recipient) {
            return prefetched.window.then((value) => {
              if (value === undefined) throw new Error('the prefetched window read failed')
              return value
            })
          }
          return this.#read(serviceWindowKey(this.#prefix, rules.phoneNumberId, recipient))
        }),
      ])
    } catch (error) {
      // Unknown, as without the policy: the platform decides (and storing the message needs Redis anyway).
      this.#log.warn({ err: error }, 'service windows not read; sending as if unknown')
      await consent
      return errors
    }
    await consent
    const lastInbound = answers
    windows.forEach((i, n) => {
      const send = sends[i] as SendToCheck
      if (!errors[i] && serviceWindowState(lastInbound[n] ?? null, loaded ?? null, now) === 'closed') {
        errors[i] = outsideWindow(send.field, send.body)
      }
    })
    return errors
  }

  /** The sender's default channel fallback (its settings), for a send that carries none. */
  defaultFallback(senderId: string): MessageFallback | null {
    return this.#rules.get(senderId)?.defaultFallback ?? null
  }

  /** Whether a send is a marketing template for this sender (see `isMarketing`). */
  isMarketing(senderId: string, send: SendToCheck): boolean {
    return isMarketing(this.#rules.get(senderId), send)
  }

  /**
   * The suppression list (Redis copy): a recipient who opted out of everything gets nothing; one
   * who opted out of marketing gets no marketing template (its category from the sender's catalog,
   * else the send's own). Then the sender's frequency cap: each marketing template that passed
   * every other check is counted per recipient (across every API instance); past the cap it is
   * refused. The marketing templates of a request under a cap take both in one script (one per
   * message on a Cluster: each recipient's keys are in a slot of their own); the other sends of
   * every request of a turn of the event loop, one `MGET` (a `GET` each on a Cluster). Sent in
   * order on one connection, two messages to one recipient in a batch take the cap's places in
   * turn. Counted at accept: a message counted and later canceled still counts. An entry missing
   * from the copy lets the send through (the copy is rebuilt from Postgres when lost); Redis
   * unreachable lets it through too, as storing the message then fails anyway.
   */
  async #checkConsent(
    phoneNumberId: string,
    owner: SuppressionOwner,
    rules: SenderRules | undefined,
    sends: SendToCheck[],
    errors: Array<AppError | undefined>,
    prefetched: Prefetched | undefined,
    /** Other numbers whose entries block these sends (a pooled key's pool's), read beside: any one blocks. */
    others: readonly string[] | undefined,
  ) {
    const open = sends.flatMap((_send, i) => (errors[i] ? [] : [i]))
    if (open.length === 0) return
    const cap = rules?.marketingCap ?? null
    // Each send's hash once, whichever of its reads needs it.
    const hashes: string[] = []
    const hashOf = (i: number) => (hashes[i] ??= this.#hash(recipientOf((sends[i] as SendToCheck).body)))
    const keysOf = (i: number) => {
      // Keyed by the recipient's hash: an opt-out kept after its recipient was erased (stored hashed)
      // is found by this same single read.
      const hashed = hashOf(i)
      return [
        suppressionKey(this.#prefix, phoneNumberId, hashed),
        marketingCountKey(this.#prefix, phoneNumberId, hashed),
      ] as const
    }
    const counted = new Set(cap ? open.filter((i) => isMarketing(rules, sends[i] as SendToCheck)) : [])
    const marketing = [...counted]
    const answers = new Map<number, unknown>()
    const blockedElsewhere = new Map<number, string>()
    try {
      // Each send's entries on the other numbers: a single send's read early, the others' in the
      // same MGET as the rest; waited for only while some are still out.
      const elsewhere =
        others === undefined || others.length === 0
          ? []
          : open.map((i): [number, OptOutsElsewhere] => {
              const recipient = recipientOf((sends[i] as SendToCheck).body)
              const early = prefetched?.elsewhere
              const read =
                early &&
                early.owner === owner &&
                early.recipient === recipient &&
                sameNumbers(early.numbers, others)
                  ? early
                  : this.#readElsewhere(others, recipient, hashOf(i), owner, this.#listed(hashOf(i)))
              return [i, read]
            })
      // The other sends' entries, read with those of every request of this turn.
      const plain = open.filter((i) => !counted.has(i))
      const reads = plain.map(async (i) => {
        const early = prefetched?.consent
        if (
          early?.number === phoneNumberId &&
          early.owner === owner &&
          prefetched?.recipient === recipientOf(sends[i]?.body ?? {})
        ) {
          const value = await early.read
          if (value === undefined) throw new Error('the prefetched suppression read failed')
          answers.set(i, value)
        } else answers.set(i, await this.#readEntries(phoneNumberId, hashOf(i), owner))
      })
      const args: [number, number] = [cap?.count ?? 0, (cap?.hours ?? 0) * 3_600_000]
      // One script for the marketing messages of every request of the turn under this cap; on a
      // Cluster, one per message (its slot).
      const groups = this.#redis.isCluster ? marketing.map((i) => [i]) : marketing.length ? [marketing] : []
      const scripts = groups.map(async (group) => {
        // A marketing send an opt-out on another number of the pool refuses is not counted against
        // the cap: those entries first (a single send's are in by now, read early).
        const counting = elsewhere.length ? await this.#notBlockedElsewhere(group, elsewhere, answers) : group
        if (counting.length === 0) return
        const keys = counting.flatMap(keysOf)
        const replies = await this.#countMarketing({ keys, args, owners: counting.map(() => owner) })
        for (const [n, i] of counting.entries()) answers.set(i, replies[n])
      })
      const waiting = elsewhere.flatMap(([, read]) => read.settled() ?? [])
      await Promise.all([...reads, ...scripts, ...waiting])
      for (const [i, read] of elsewhere) {
        if (read.failed) throw new Error('the entries on the pool’s other numbers were not read')
        if (read.widest) blockedElsewhere.set(i, read.widest)
      }
    } catch (error) {
      this.#log.warn({ err: error }, 'consent not checked; sending as if no one opted out, under any cap')
      return
    }
    answers.forEach((answer, i) => {
      const send = sends[i] as SendToCheck
      const who = `${recipientField(send.body, send.field)}: ${recipientOf(send.body)}`
      const elsewhere = blockedElsewhere.get(i)
      const here = blocks(answer, rules, send)
      if (here || blocks(elsewhere, rules, send)) {
        errors[i] = new AppError(
          'RECIPIENT_OPTED_OUT',
          `${who} opted out of ${(here ? answer : elsewhere) === 'all' ? 'messages' : 'marketing messages'} from ${here ? 'this sender' : "another number of this key's sender pool"}`,
        )
      } else if (answer === 0 && cap) {
        errors[i] = new AppError(
          'FREQUENCY_CAP_EXCEEDED',
          `${who} already got ${cap.count} marketing message${cap.count === 1 ? '' : 's'} from this sender in the last ${cap.hours} h (the sender's frequency cap)`,
        )
      }
    })
  }
}

/** No other numbers: a pool of the send's number alone. */
const NONE: readonly string[] = Object.freeze([])

const sameNumbers = (a: readonly string[], b: readonly string[]) =>
  a === b || (a.length === b.length && a.every((number, i) => number === b[i]))

/**
 * A recipient's entries on several numbers (a pooled send's pool's other numbers), read in the
 * turn's MGET and taken as they land, no promise each: the widest scope blocking `owner`.
 */
export class OptOutsElsewhere implements Settle<string | null> {
  readonly numbers: readonly string[]
  readonly recipient: string
  readonly owner: SuppressionOwner
  /** The widest scope read so far that blocks the owner; null: none. */
  widest: string | null = null
  /** Some read failed: the entries are not known. */
  failed = false
  #left: number
  #wake: Array<() => void> | undefined

  /** `reads`: how many land here (each number's entry, or the recipient's list of numbers first). */
  constructor(numbers: readonly string[], recipient: string, owner: SuppressionOwner, reads: number) {
    this.numbers = numbers
    this.recipient = recipient
    this.owner = owner
    this.#left = reads
  }

  /** The list of numbers landed: `entries` of them to read, whose entries land here next. */
  expect(entries: number): void {
    this.#left += entries
    this.#landed()
  }

  resolve(value: string | null): void {
    this.widest = widerScope(this.widest, scopeForOwner(value, this.owner))
    this.#landed()
  }

  reject(): void {
    this.failed = true
    this.#landed()
  }

  /** Once every read is in (undefined when they are already). */
  settled(): Promise<void> | undefined {
    if (this.#left === 0) return undefined
    return new Promise((resolve) => {
      this.#wake ??= []
      this.#wake.push(resolve)
    })
  }

  #landed(): void {
    if (--this.#left > 0 || !this.#wake) return
    for (const wake of this.#wake) wake()
    this.#wake = undefined
  }
}

/** Whether an entry's scope for the send's owner refuses it: `all`, or `marketing` for a marketing send. */
const blocks = (scope: unknown, rules: SenderRules | undefined, send: SendToCheck) =>
  scope === 'all' || (scope === 'marketing' && isMarketing(rules, send))

/**
 * A marketing template send: its template filed under MARKETING by the sender's catalog, or, when
 * the catalog does not know it (never synced, or the sender is unknown here), by the send's own
 * `category`. The catalog wins: a send cannot call a catalog's marketing template utility.
 */
export function isMarketing(rules: SenderRules | undefined, send: SendToCheck): boolean {
  if (send.type !== 'template') return false
  const { templateId, language, category } = send.body
  if (templateId === undefined || language === undefined) return false
  const known = rules?.templates.get(templateKey(templateId, language))?.category
  return (known ?? category)?.toUpperCase() === 'MARKETING'
}
