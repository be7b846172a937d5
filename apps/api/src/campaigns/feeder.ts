import { randomUUID } from 'node:crypto'
import { type ErrorCode, Scopes } from '@dispatch/contracts'
import {
  type ApiKeyRow,
  assignWindow,
  type CampaignRow,
  campaignCounts,
  campaignsToFeed,
  cancelCampaign,
  confirmWindow,
  emitCampaignEvent,
  type FedRow,
  findApiKeyById,
  findCampaign,
  foldCampaignTallies,
  hasPendingRows,
  type RefusedRow,
  recordedMessageIds,
  recountCampaignEngagement,
  startCampaign,
  takeCampaignFeed,
  transitionCampaign,
  unconfirmedRows,
  unfinished,
} from '@dispatch/db'
import { acceptedAtOfMessageId, readReach } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { isOutage } from '@dispatch/runtime/outages'
import type { RedisClient } from '@dispatch/runtime/redis'
import { AppError } from '../errors.ts'
import {
  defineDailyQuotaScript,
  returnDailyQuota,
  spendDailyQuota,
  utcDayOf,
} from '../sending/daily-quota.ts'
import type { SendItem } from '../sending/judge.ts'
import type { Sending } from '../sending/sending.ts'
import { type Submitted, submit } from '../sending/submit.ts'

/** What the feeder is told; the rest it takes from `sending` (config, db, Redis through the store). */
export interface FeederOptions {
  /** Recipients a campaign keeps waiting in its key's `low` list at most (CAMPAIGN_WINDOW). */
  window: number
  /** How often the feeder looks for work (CAMPAIGN_FEED_INTERVAL_MS). */
  intervalMs: number
  /** At most one `campaign.progress` event this often per campaign (CAMPAIGN_PROGRESS_SECONDS). */
  progressSeconds: number
  /** How long a feeder's claim on a campaign lasts unless renewed. */
  leaseMs?: number
}

/**
 * How soon the next turn comes while a campaign is being fed: a sender that drains half a window
 * faster than CAMPAIGN_FEED_INTERVAL_MS (2,000 messages a second at the defaults) would otherwise
 * wait for the feeder with its list empty, the interval rather than the sender setting the pace
 * (docs/benchmarks-campaigns.md, campaign sending). Right after a turn that stored a window the
 * next comes at once; after one that found the lists full, this much later; an idle feeder, or
 * one whose campaigns' lists stay full (a sender at its rate), looks only every interval.
 */
const QUICK_TURN_MS = 25

/**
 * The counts (every row of the campaign and every message of it, grouped) are taken at most every
 * CAMPAIGN_PROGRESS_SECONDS, and no sooner than this many times their last count's duration: a
 * million-recipient campaign's count takes Postgres about a second, which every 5 s was a fifth of
 * a core taken from the sends it counts (campaign fairness, docs/benchmarks-campaigns.md).
 */
const COUNTING_SHARE = 20

/**
 * How often a feeder folds the counts' moves (`foldCampaignTallies`) besides each count: so those
 * of campaigns no one counts any more (a completed one's `delivered` and `read`) are folded too.
 */
const FOLD_EVERY_MS = 5_000

/** Rows submitted at a time when a window is stored (campaign fairness, docs/benchmarks-campaigns.md). */
const STORE_SLICE = 200

/** Refusals that say "not now", not "never": the rows are stored again on a later turn, same ids. */
const RETRY_LATER: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'OUTSTANDING_LIMIT_REACHED',
  'RATE_LIMITED',
  'QUOTA_EXCEEDED',
  'SERVICE_UNAVAILABLE',
])

/** Why a row whose send was refused is skipped, by the refusal's code. */
const SKIP_REASON: Partial<Record<ErrorCode, string>> = {
  RECIPIENT_OPTED_OUT: 'opted_out',
  VALIDATION_ERROR: 'invalid_recipient',
  TEMPLATE_PARAMETERS_MISMATCH: 'invalid_variables',
}

/**
 * Feeds running campaigns into their senders' fair queues (docs/campaigns.md). Every API instance
 * runs one; a campaign is fed by one instance at a time, the one holding its lease in Redis. Each
 * turn, per campaign:
 * 1. rows fed but not confirmed stored (a feeder stopped between the two) are stored again under
 *    the ids they were given, marked `readmitted` so the worker reads each record before sending;
 * 2. when fewer than `window / 2` of the key's `low` messages wait for admission and the sender's
 *    portfolio is not at its messaging limit, the next `window` rows (or what is left of the key's
 *    daily quota, spent here: none once it is spent, until midnight UTC) get message ids in
 *    Postgres (`assignWindow`, which locks the campaign's row and feeds only a `running` one), then
 *    are submitted as template sends at `low` priority through `submit`, judged as any send is,
 *    held (never refused) at the messaging limit; a refused row is skipped with its code (and
 *    given back to the quota); then the window is confirmed;
 * 3. at most every `progressSeconds` (and no sooner than COUNTING_SHARE times the last count's
 *    duration), the counts: a `campaign.progress` event, and `completed` with its event once every
 *    row is fed and every message has ended.
 * A turn that stored a window is followed by another at once, then turns every QUICK_TURN_MS for
 * an interval; a campaign started or resumed on this instance gets a turn at once (`nudge`).
 * So Redis holds at most about a window of a campaign's messages waiting, plus those held.
 */
export function startCampaignFeeder(sending: Sending, redis: RedisClient, options: FeederOptions) {
  const { db, log } = sending
  const prefix = sending.config.QUEUE_PREFIX
  defineDailyQuotaScript(redis)
  const owner = randomUUID()
  const leaseMs = options.leaseMs ?? Math.max(10_000, options.intervalMs * 10)
  const lastProgress = new Map<string, number>()
  /** How long each campaign's last count took (ms). */
  const countingMs = new Map<string, number>()
  let stopped = false
  let running: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined

  /**
   * The fencing token of each campaign this instance holds the lease of: taken from Postgres
   * (`takeCampaignFeed`) each time the lease is taken, so a later holder's is always greater, and
   * Postgres refuses a window assigned or confirmed under an older one (a turn that outlived its
   * lease: slow Postgres, a paused process).
   */
  const tokens = new Map<string, number>()
  const leaseKey = (campaignId: string) => `${prefix}:campaign-lease:${campaignId}`

  /**
   * Takes or keeps this instance's lease on a campaign: its fencing token, or undefined when another
   * instance holds it.
   */
  async function lease(campaignId: string): Promise<number | undefined> {
    const key = leaseKey(campaignId)
    const before = await redis.set(key, owner, 'PX', leaseMs, 'NX', 'GET')
    if (before === null) {
      tokens.set(campaignId, await takeCampaignFeed(db, campaignId))
      // Which instance feeds a campaign, for whoever follows one (and the fault tests).
      log.info({ campaignId, feeder: owner }, 'campaign lease taken')
    } else if (before !== owner) {
      tokens.delete(campaignId)
      return undefined
    } else {
      // Renewed only when ours: renewing another's would keep a dead holder's lease alive forever.
      await redis.pexpire(key, leaseMs)
      if (!tokens.has(campaignId)) tokens.set(campaignId, await takeCampaignFeed(db, campaignId))
    }
    return tokens.get(campaignId)
  }

  /**
   * Whether this instance still holds a campaign's lease, renewed when it does: asked before each
   * slice of a window is stored, so a turn that outlived its lease stops storing (what it stored
   * has the ids the next holder stores again: the worker sends an id once).
   */
  async function stillHeld(campaignId: string): Promise<boolean> {
    if ((await redis.get(leaseKey(campaignId))) !== owner) {
      if (tokens.delete(campaignId)) log.warn({ campaignId, feeder: owner }, 'campaign lease lost mid-turn')
      return false
    }
    // Renewed only when ours (another's renewed would outlive its holder).
    await redis.pexpire(leaseKey(campaignId), leaseMs)
    return true
  }

  function sendsOf(campaign: CampaignRow, rows: FedRow[]): SendItem[] {
    const { template } = campaign
    return rows.map((row) => ({
      type: 'template' as const,
      field: `line ${row.line}`,
      body: {
        ...(row.phone ? { phone: row.phone } : {}),
        ...(row.userId ? { userId: row.userId } : {}),
        templateId: template.templateId,
        language: template.language,
        ...(row.variables && Object.keys(row.variables).length > 0 ? { variables: row.variables } : {}),
        ...(template.headerVariables ? { headerVariables: template.headerVariables } : {}),
        ...(template.buttonVariables ? { buttonVariables: template.buttonVariables } : {}),
        priority: 'low' as const,
        ...(campaign.validitySeconds ? { validitySeconds: campaign.validitySeconds } : {}),
        ...(campaign.quietHours ? { quietHours: campaign.quietHours } : {}),
      } as SendItem['body'],
    }))
  }

  /**
   * Stores rows (all given their ids at one time) and confirms them: answers false when they must be
   * stored again later (the key's bound, Redis away), leaving them unconfirmed.
   */
  async function store(
    campaign: CampaignRow,
    rows: FedRow[],
    again: boolean,
    token: number,
    /** The campaign's key as this turn read it (spending the quota), else read here. */
    known?: ApiKeyRow,
  ): Promise<boolean> {
    const key = known ?? (await findApiKeyById(db, campaign.apiKeyId))
    if (key?.status !== 'approved' || !key.scopes.includes(Scopes.sendTemplate)) {
      // A revoked key's campaign ends with it; a key not (yet, or no longer) approved waits.
      if (key?.status === 'revoked') await cancelForKey(campaign)
      return false
    }
    const ids = rows.map((r) => r.messageId)
    // The ids carry the time they were given: the messages are accepted then, as first stored.
    const at = new Date(acceptedAtOfMessageId(ids[0] as string) ?? sending.clock().getTime())
    const answers: Submitted[] = []
    try {
      // A slice at a time: judging a whole window is one stretch of the event loop that the
      // API's own requests (another key's sends) would wait behind.
      // The lease, taken or renewed at the turn's start, is checked and renewed as each slice is
      // stored (beside the store, not before it): a lost one stops the next slice.
      for (let from = 0; from < rows.length; from += STORE_SLICE) {
        const slice = rows.slice(from, from + STORE_SLICE)
        const [held, stored] = await Promise.all([
          stillHeld(campaign.id),
          submit(sending, key, sendsOf(campaign, slice), {
            now: at,
            batchId: campaign.id,
            messageIds: ids.slice(from, from + STORE_SLICE),
            again,
            holdAtLimit: true,
          }),
        ])
        answers.push(...stored)
        if (!held) return false
      }
    } catch (error) {
      if (error instanceof AppError && RETRY_LATER.has(error.errorCode as ErrorCode)) return false
      throw error
    }
    const refused: RefusedRow[] = []
    answers.forEach((answer, i) => {
      if (!('error' in answer)) return
      const { errorCode, message } = answer.error
      if (RETRY_LATER.has(errorCode as ErrorCode)) return
      refused.push({
        line: (rows[i] as FedRow).line,
        reason: SKIP_REASON[errorCode as ErrorCode] ?? 'refused',
        errorCode,
        detail: message,
      })
    })
    const later = answers.some((a) => 'error' in a && RETRY_LATER.has(a.error.errorCode as ErrorCode))
    if (later) {
      // Those stored stay stored; the window is stored again (same ids) once there is room.
      return false
    }
    const skipped = again ? await notStoredBefore(campaign, rows, refused) : refused
    const through = (rows[rows.length - 1] as FedRow).line
    if (!(await confirmWindow(db, campaign.id, through, skipped, sending.clock(), token))) {
      log.warn(
        { campaignId: campaign.id, feeder: owner },
        'campaign window not confirmed: its lease was taken',
      )
      tokens.delete(campaign.id)
      return false
    }
    // A refused send spends no quota: given back to the day the window spent it on.
    await returnDailyQuota(redis, prefix, campaign.apiKeyId, skipped.length, at).catch((error) =>
      log.warn(
        { err: error, campaignId: campaign.id },
        'skipped rows still counted today: Redis unreachable',
      ),
    )
    return true
  }

  /**
   * Takes the next window's size from the key's daily quota (the day's count `GET /me` reads, not
   * its request rate: docs/campaigns.md), before the rows get their ids: answers how many rows to
   * feed, fewer than a window when little is left, none when it is spent. The campaign says so
   * (`waitingFor: daily_quota` until midnight UTC) while it gets none, and no more once it does.
   */
  async function spendQuota(campaign: CampaignRow, now: Date): Promise<{ granted: number; key?: ApiKeyRow }> {
    const [pending, key] = await Promise.all([
      hasPendingRows(db, campaign),
      findApiKeyById(db, campaign.apiKeyId),
    ])
    // Every row fed (its messages still going): nothing to spend, nothing to wait for.
    if (!pending || !key) return { granted: 0 }
    const granted = await spendDailyQuota(redis, prefix, key, options.window, now)
    const waitingFor = granted === 0 ? 'daily_quota' : null
    if (campaign.waitingFor !== waitingFor) {
      const waitingUntil = waitingFor ? utcDayOf(now).resetsAt : null
      await transitionCampaign(db, campaign.id, ['running'], 'running', now, {
        set: { waitingFor, waitingUntil },
      })
      log.info(
        { campaignId: campaign.id, dailyQuota: key.dailyQuota, waitingUntil },
        waitingFor
          ? "campaign waits: its key's daily quota is spent"
          : 'campaign fed again: its key has quota',
      )
    }
    return { granted, key }
  }

  /**
   * Of the rows a window's second store refused (a recipient opted out since the first), those
   * whose message the first store left nowhere: the others keep their message, which ends as any
   * does (sent, or stopped at the worker's gate) and counts for its row, so the row is counted
   * once. Redis is read first: a message leaves it only once its record is in Postgres.
   */
  async function notStoredBefore(campaign: CampaignRow, rows: FedRow[], refused: RefusedRow[]) {
    if (refused.length === 0) return refused
    const idOf = new Map(rows.map((row) => [row.line, row.messageId]))
    const inRedis = new Set<string>()
    for (const { line } of refused) {
      const id = idOf.get(line) as string
      if (await sending.messages.find(campaign.senderId, id)) inRedis.add(id)
    }
    const rest = refused.map((r) => idOf.get(r.line) as string).filter((id) => !inRedis.has(id))
    const recorded = rest.length > 0 ? await recordedMessageIds(db, rest) : new Set<string>()
    return refused.filter(({ line }) => {
      const id = idOf.get(line) as string
      return !inRedis.has(id) && !recorded.has(id)
    })
  }

  async function cancelForKey(campaign: CampaignRow) {
    log.warn({ campaignId: campaign.id }, 'campaign key revoked: the campaign is canceled')
    await cancelCampaign(db, campaign.id, sending.clock())
  }

  /**
   * Whether the sender's portfolio is at its messaging limit now: then nothing more is fed (each
   * message fed would only be held in Redis until room frees); those fed wait as they are. The
   * limit is the send rules' (in memory, kept current as the send checks' is); the reach is read
   * from Redis, and an unreadable one feeds, as an untracked limit does.
   */
  async function atLimit(campaign: CampaignRow, now: Date): Promise<boolean> {
    const limit = sending.rules.get(campaign.senderId)?.messagingLimit
    if (!limit?.tracked || limit.limit === null) return false
    // Folded only at the limit: far from it the count waits in the recent list.
    const reached = await readReach(redis, prefix, limit.portfolio, now.getTime(), limit.limit).catch(
      () => null,
    )
    return reached !== null && reached.reach >= limit.limit
  }

  /** How many of the key's `low` messages wait for admission on the campaign's sender. */
  const waiting = (campaign: CampaignRow) =>
    redis.llen(fairKeys(prefix, campaign.senderId).list('low', campaign.apiKeyId))

  async function progress(campaign: CampaignRow, now: Date) {
    const last = lastProgress.get(campaign.id) ?? campaign.progressAt?.getTime() ?? 0
    const gapMs = Math.max(
      options.progressSeconds * 1000,
      (countingMs.get(campaign.id) ?? 0) * COUNTING_SHARE,
    )
    if (now.getTime() - last < gapMs) return
    lastProgress.set(campaign.id, now.getTime())
    const counting = performance.now()
    const { counts, failedByCode, pricing, engagement } = await campaignCounts(db, campaign)
    countingMs.set(campaign.id, performance.now() - counting)
    const done =
      campaign.fedThrough === campaign.confirmedThrough &&
      unfinished(counts) === 0 &&
      !(await hasPendingRows(db, campaign))
    if (done) {
      // Once, at its end: replies stored before their message's record counted too.
      await recountCampaignEngagement(db, campaign.id)
      const engaged = (await campaignCounts(db, campaign)).engagement
      await db.transaction(async (tx) => {
        const row = await transitionCampaign(tx, campaign.id, ['running'], 'completed', now, {
          set: { completedAt: now, progressAt: now },
        })
        if (row)
          await emitCampaignEvent(
            tx,
            row,
            'campaign.completed',
            { counts, failedByCode, pricing, engagement: engaged },
            now,
          )
      })
      lastProgress.delete(campaign.id)
      countingMs.delete(campaign.id)
      log.info({ campaignId: campaign.id, counts }, 'campaign completed')
      return
    }
    await db.transaction(async (tx) => {
      const row = await transitionCampaign(tx, campaign.id, ['running'], 'running', now, {
        set: { progressAt: now },
      })
      if (row)
        await emitCampaignEvent(
          tx,
          row,
          'campaign.progress',
          { counts, failedByCode, pricing, engagement },
          now,
        )
    })
  }

  /** Feeds one campaign its turn; answers whether a window was stored. */
  async function feed(found: CampaignRow, now: Date): Promise<boolean> {
    // The key's list is read beside the lease (read again below after a store of unconfirmed rows).
    const [token, waitingAtStart] = await Promise.all([lease(found.id), waiting(found)])
    if (token === undefined) return false
    let campaign = found
    let fed = false
    if (campaign.status === 'scheduled') {
      const started = await startCampaign(db, campaign.id, ['scheduled'], now)
      if (started?.status !== 'running') return false
      campaign = started
      log.info({ campaignId: campaign.id }, 'campaign started at its startAt')
    }
    const unconfirmed = await unconfirmedRows(db, campaign)
    let waitingNow = waitingAtStart
    if (unconfirmed.length > 0) {
      // Stored again under their ids, grouped by the time each id carries.
      if (!(await store(campaign, unconfirmed, true, token))) return false
      campaign = (await findCampaign(db, campaign.id)) ?? campaign
      waitingNow = await waiting(campaign)
    }
    if (waitingNow < options.window / 2 && !(await atLimit(campaign, now))) {
      const { granted, key } = await spendQuota(campaign, now)
      const rows = granted > 0 ? await assignWindow(db, campaign.id, granted, now, token) : []
      // The audience's end, or the campaign paused meanwhile: what was not fed is given back.
      if (rows.length < granted)
        await returnDailyQuota(redis, prefix, campaign.apiKeyId, granted - rows.length, now)
      if (rows.length > 0) {
        fed = await store(campaign, rows, false, token, key)
        // A turn that lost its lease leaves the campaign, its counts too, to the new holder.
        if (!tokens.has(campaign.id)) return false
        campaign = (await findCampaign(db, campaign.id)) ?? campaign
      }
    }
    if (campaign.status === 'running') await progress(campaign, now)
    return fed
  }

  /** Until when turns come every QUICK_TURN_MS: for `intervalMs` after a turn that fed a window. */
  let quickUntil = 0

  /** Postgres or Redis unreachable since this turn: said once, and again once feeding goes on. */
  let away = false
  function failed(error: unknown, campaignId?: string) {
    if (stopped) return // cut short by the app's close (its connections ended): not a failure
    if (!isOutage(error)) {
      log.error({ err: error, campaignId }, 'campaign feed failed; trying again next turn')
      return
    }
    if (away) return
    away = true
    log.warn({ err: error, campaignId }, 'campaign feeding waits: Postgres or Redis unreachable')
  }

  let foldedAt = 0

  /** One turn over every campaign to feed; answers whether it stored a window. */
  async function turn(): Promise<boolean> {
    const now = sending.clock()
    if (Date.now() - foldedAt >= FOLD_EVERY_MS) {
      foldedAt = Date.now()
      await foldCampaignTallies(db)
    }
    const campaigns = await campaignsToFeed(db, now)
    let fed = false
    for (const campaign of campaigns) {
      if (stopped) return fed
      try {
        if (await feed(campaign, now)) {
          fed = true
          quickUntil = Date.now() + options.intervalMs
        }
      } catch (error) {
        failed(error, campaign.id)
        // Unreachable for one is unreachable for all: the next turn tries again. A bug in one
        // campaign's feeding leaves the others fed.
        if (isOutage(error)) return fed
      }
    }
    if (away) {
      away = false
      log.info('campaign feeding goes on: Postgres and Redis reachable again')
    }
    return fed
  }

  /**
   * Whether the next turn comes at once: after a turn that stored a window (the list it fills may
   * already be drained: a wait there is the campaign's pace, not the sender's), or when a campaign
   * was just started or resumed here (`nudge`).
   */
  let soon = false
  let turning = false
  const schedule = () => {
    if (stopped) return
    const delay = soon
      ? 0
      : Date.now() < quickUntil
        ? Math.min(QUICK_TURN_MS, options.intervalMs)
        : options.intervalMs
    timer = setTimeout(() => {
      soon = false
      turning = true
      running = turn()
        .then((fed) => {
          if (fed) soon = true
        })
        .catch((error) => failed(error))
        .finally(() => {
          turning = false
          schedule()
        })
    }, delay)
    timer.unref()
  }
  schedule()

  return {
    /** One turn now (tests). */
    turn,
    /** A campaign was started or resumed: a turn comes at once, not an interval later. */
    nudge() {
      soon = true
      if (turning || stopped) return
      if (timer) clearTimeout(timer)
      schedule()
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    },
  }
}
export type CampaignFeeder = ReturnType<typeof startCampaignFeeder>
