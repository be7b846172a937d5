import { randomUUID } from 'node:crypto'
import {
  DEFAULT_SENDER_ID,
  SENDER_CHANGES_CHANNEL,
  TEMPLATE_CHANGES_CHANNEL,
  type TemplateSyncResult,
  templateSyncLockKey,
  templateVariables,
} from '@dispatch/contracts'
import {
  type Db,
  findSender,
  recordSenderHealth,
  replaceSenderTemplates,
  type SenderRow,
  type SyncedTemplate,
} from '@dispatch/db'
import { createSecretBox } from '@dispatch/runtime'
import type { PlatformName } from '@dispatch/runtime/env'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import { RELEASE_LOCK_SCRIPT, type RedisClient } from '@dispatch/runtime/redis'
import { fetchMessagingLimitTier, fetchTemplates, type GraphTemplate, TemplateFetchError } from './graph.ts'

export interface TemplateSyncConfig {
  QUEUE_PREFIX: string
  WHATSAPP_API_URL: string
  WHATSAPP_ACCESS_TOKEN?: string | undefined
  platform: PlatformName
  APP_ENV: string
  SECRETS_KEY?: string | undefined
  SECRETS_KEY_PREVIOUS?: string | undefined
}

export interface TemplateSyncDeps {
  db: Db
  redis: RedisClient
  config: TemplateSyncConfig
  /** Per request to the Graph API. */
  timeoutMs?: number
}

/** Why a sync did not run; the caller says what to do about it. */
export class TemplateSyncRefused extends Error {
  override name = 'TemplateSyncRefused'
  readonly reason: 'not-found' | 'no-waba' | 'no-credentials' | 'busy'

  constructor(reason: TemplateSyncRefused['reason'], message: string) {
    super(message)
    this.reason = reason
  }
}

/** How long one sync may hold its sender's lock: far past a few pages, short enough to recover. */
const LOCK_MS = 120_000

/** The token a sync reads the sender's account with, or undefined when it has none. */
function accessTokenOf(sender: SenderRow, config: TemplateSyncConfig): string | undefined {
  if (sender.id === DEFAULT_SENDER_ID) {
    return config.platform === 'whatsapp-cloud' ? config.WHATSAPP_ACCESS_TOKEN : undefined
  }
  return sender.accessTokenCiphertext ? createSecretBox(config).open(sender.accessTokenCiphertext) : undefined
}

/** A Graph template as the catalog stores it, with what a send must fill read from its components. */
export const toSyncedTemplate = (t: GraphTemplate): SyncedTemplate => ({
  platformTemplateId: t.id,
  name: t.name,
  language: t.language,
  status: t.status.toUpperCase(),
  rejectedReason: t.rejected_reason && t.rejected_reason !== 'NONE' ? t.rejected_reason : null,
  category: t.category?.toUpperCase() ?? null,
  quality: t.quality_score?.score?.toUpperCase() ?? null,
  parameterFormat: t.parameter_format?.toUpperCase() === 'NAMED' ? 'NAMED' : 'POSITIONAL',
  components: Array.isArray(t.components) ? t.components : [],
  variables: templateVariables(t.components, t.parameter_format),
})

/**
 * Syncs one sender's catalog from its WhatsApp Business Account: every page, stored in one
 * transaction, then announced on `templates:changed` so every API instance reloads it at once.
 * One sync per sender at a time across processes (a Redis lock): a second caller waits up to
 * `waitMs` for the first to finish, then runs its own (`0`: gives up at once, `busy`).
 */
export async function syncSenderTemplates(
  deps: TemplateSyncDeps,
  senderId: string,
  options: {
    waitMs?: number
    now?: () => Date
    /** Skip the sync (answer null) when, once the lock is held, the sender was synced since then. */
    staleBefore?: Date
  } = {},
): Promise<TemplateSyncResult | null> {
  const { db, redis, config } = deps
  const sender = await findSender(db, senderId)
  if (!sender) throw new TemplateSyncRefused('not-found', `No sender with id ${JSON.stringify(senderId)}`)
  if (!sender.wabaId) {
    throw new TemplateSyncRefused(
      'no-waba',
      'The sender has no wabaId: give it its WhatsApp Business Account id (PATCH /api/admin/senders/:id {"wabaId"}) first',
    )
  }
  const accessToken = accessTokenOf(sender, config)
  if (!accessToken) {
    throw new TemplateSyncRefused(
      'no-credentials',
      sender.id === DEFAULT_SENDER_ID
        ? 'The default sender has no Cloud API credentials (the sandbox has no templates): set WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID'
        : 'The sender has no access token',
    )
  }
  const lockKey = templateSyncLockKey(config.QUEUE_PREFIX, senderId)
  const lockToken = randomUUID()
  const deadline = Date.now() + (options.waitMs ?? 0)
  while ((await redis.set(lockKey, lockToken, 'PX', LOCK_MS, 'NX')) !== 'OK') {
    if (Date.now() >= deadline) {
      throw new TemplateSyncRefused('busy', 'A sync of this sender is already running; try again shortly')
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  try {
    if (options.staleBefore) {
      const synced = (await findSender(db, senderId))?.templatesSyncedAt
      if (synced && synced >= options.staleBefore) return null
    }
    const templates = await fetchTemplates({
      apiUrl: config.WHATSAPP_API_URL,
      wabaId: sender.wabaId,
      accessToken,
      timeoutMs: deps.timeoutMs ?? 10_000,
    })
    const syncedAt = options.now?.() ?? new Date()
    const changes = await replaceSenderTemplates(db, senderId, templates.map(toSyncedTemplate), syncedAt)
    await redis.publish(`${config.QUEUE_PREFIX}:${TEMPLATE_CHANGES_CHANNEL}`, senderId).catch(() => {
      // Best effort: API instances also refresh on a timer.
    })
    await syncMessagingLimit(deps, sender, accessToken, syncedAt)
    return { senderId, ...changes, syncedAt: syncedAt.toISOString() }
  } finally {
    await evalLuaScript(redis, RELEASE_LOCK_SCRIPT, lockKey, lockToken).catch(() => {})
  }
}

/**
 * The portfolio's messaging limit, read with the catalog (`fetchMessagingLimitTier`) and stored as
 * a `business_capability_update` webhook stores it: on every sender of the account, a
 * `sender.updated` event for each changed, announced on `senders:changed` so the send rules reload
 * it at once. An admin's limit (`messagingLimitOverride`) still comes first (messaging-limit.ts).
 * A read that fails leaves the limit as it was: the catalog is synced all the same.
 */
async function syncMessagingLimit(
  deps: TemplateSyncDeps,
  sender: SenderRow,
  accessToken: string,
  at: Date,
): Promise<void> {
  const { db, redis, config } = deps
  if (!sender.phoneNumberId || !sender.wabaId) return
  let tier: string | undefined
  try {
    tier = await fetchMessagingLimitTier({
      apiUrl: config.WHATSAPP_API_URL,
      phoneNumberId: sender.phoneNumberId,
      accessToken,
      timeoutMs: deps.timeoutMs ?? 10_000,
    })
  } catch (error) {
    if (error instanceof TemplateFetchError) return
    throw error
  }
  if (!tier) return
  const changed = await recordSenderHealth(
    db,
    { wabaId: sender.wabaId },
    { messagingLimitTier: tier },
    { source: 'graph_sync', at },
  )
  for (const id of changed)
    await redis.publish(`${config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`, id).catch(() => {
      // Best effort: the workers and API instances also reload senders on a timer.
    })
}
