import { CAMPAIGN_CANCELS_CHANNEL, isDispatchId } from '@dispatch/contracts'
import { type Db, findCampaign, listCanceledCampaigns } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'
import { AnnouncedSet } from './announced-set.ts'

/**
 * The canceled campaigns (id → its key), so delivery checks a message's campaign at no round trip
 * (`has`). Why delivery checks at all, when the cancel's sweep (lifecycle/campaign-cancel.ts)
 * cancels what waits in Redis: a message a worker holds keeps its claim, and the sweep gives way to
 * it. Held for the messaging limit (hours, for the campaigns that meet it) or waiting for a retry,
 * it would go long after the cancel was answered; and a window a feeder assigned just before the
 * cancel may be stored after the sweep's last pass. Each meets this set when it next comes to
 * delivery, and ends `canceled` (`CAMPAIGN_CANCELED`) unsent. The sweep announces a cancel on
 * `CAMPAIGN_CANCELS_CHANNEL` (the campaign's id); a cancel is final.
 */
export class CanceledCampaigns extends AnnouncedSet<string> {
  constructor(options: {
    db: Db
    subscriber: RedisClient
    prefix: string
    logger: Logger
    refreshMs?: number
  }) {
    const { db } = options
    super({
      ...options,
      name: 'canceled campaigns',
      channel: `${options.prefix}:${CAMPAIGN_CANCELS_CHANNEL}`,
      readAll: async () =>
        (await listCanceledCampaigns(db)).map(({ id, apiKeyId }) => [id, apiKeyId] as const),
      idOf: (message) => (isDispatchId(message) ? message : undefined),
      confirm: async (id) => {
        const campaign = await findCampaign(db, id)
        return campaign?.status === 'canceled' ? campaign.apiKeyId : undefined
      },
    })
  }

  /** Whether the message of this batch id and key is a canceled campaign's (as this process last heard). */
  has(batchId: string | undefined, apiKeyId: string): boolean {
    return batchId !== undefined && this.get(batchId) === apiKeyId
  }
}
