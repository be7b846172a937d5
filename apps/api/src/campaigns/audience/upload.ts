import {
  CAMPAIGN_AUDIENCE_UPLOAD_STATUSES,
  type CampaignAudienceUploaded,
  DEFAULT_SENDER_ID,
} from '@dispatch/contracts'
import type { AudienceBatch, AudienceConsent, CampaignRow, ReplacedAudience } from '@dispatch/db'
import { type RecipientHasher, recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ApiConfig } from '../../env.ts'
import { AppError } from '../../errors.ts'
import type { SendRulesCache } from '../../sending/checks/send-rules-cache.ts'
import { AUDIENCE_LIMITS, readAudience, tooManyBytes } from './read-audience.ts'
import { audienceTemplate } from './template-variables.ts'
import { acceptAudienceBodies, UploadBody } from './upload-body.ts'

/** Replaces a campaign's audience with judged rows (the key's owned layer, or an admin's query). */
export type ReplaceAudience = (
  rows: AsyncIterable<AudienceBatch>,
  options: { format: 'csv' | 'ndjson'; consent: Omit<AudienceConsent, 'owner'>; at: Date },
) => Promise<ReplacedAudience>

export interface AudienceUploadDeps {
  config: ApiConfig
  rules: SendRulesCache
  hash: RecipientHasher
  clock: () => Date
}

/**
 * What an audience route plugin (the key's, the admin's) needs: its body parsers (CSV, NDJSON
 * only, on this plugin alone), and the upload's deps from the app.
 */
export function audienceRoutesOf(app: FastifyInstance): AudienceUploadDeps {
  acceptAudienceBodies(app)
  const { config, clock } = app.deps
  return { config, clock, rules: app.sending.rules, hash: app.deps.recipientHash ?? recipientHasher(config) }
}

/** An answer given before the body is read: the connection closes rather than read the rest. */
const refuse = (error: AppError) =>
  Object.assign(error, { headers: { ...error.headers, connection: 'close' } })

const notFound = (id: string) => new AppError('NOT_FOUND', `Campaign ${id} not found`)
const invalidState = (status: string) =>
  new AppError(
    'INVALID_STATE_TRANSITION',
    `The campaign is ${status}: its audience can be uploaded only while it is draft or ready`,
  )

/**
 * An upload of `campaign`'s audience (found by the caller: undefined answers 404), end to end:
 * refused before its body is read when the campaign cannot take one, its template looked up in
 * the sender's catalog as a send's is, then the body streamed through the judge into `replace`.
 */
export async function uploadAudience(
  deps: AudienceUploadDeps,
  request: FastifyRequest,
  campaignId: string,
  campaign: CampaignRow | undefined,
  replace: ReplaceAudience,
): Promise<CampaignAudienceUploaded> {
  if (!campaign) throw refuse(notFound(campaignId))
  const body = request.body as unknown
  if (!(body instanceof UploadBody)) {
    throw refuse(
      new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be text/csv or application/x-ndjson'),
    )
  }
  if (!(CAMPAIGN_AUDIENCE_UPLOAD_STATUSES as readonly string[]).includes(campaign.status)) {
    throw refuse(invalidState(campaign.status))
  }
  if (Number(request.headers['content-length'] ?? 0) > AUDIENCE_LIMITS.maxBytes) {
    throw refuse(tooManyBytes(AUDIENCE_LIMITS.maxBytes))
  }
  const rules = deps.rules.get(campaign.senderId)
  const template = audienceTemplate(rules, campaign.template)
  const number =
    rules?.phoneNumberId ??
    (campaign.senderId === DEFAULT_SENDER_ID ? defaultPhoneNumberId(deps.config) : undefined)
  let replaced: ReplacedAudience
  try {
    replaced = await replace(readAudience(body.stream, body.format, template.expected), {
      format: body.format,
      consent: {
        from: number ? { phoneNumberId: number } : { senderId: campaign.senderId },
        marketing: template.marketing,
        hash: deps.hash,
      },
      at: deps.clock(),
    })
  } catch (error) {
    if (!request.raw.complete && error instanceof AppError) throw refuse(error)
    throw error
  }
  if (replaced.outcome === 'not_found') throw notFound(campaignId)
  if (replaced.outcome === 'wrong_state') throw invalidState(replaced.status)
  const { audience } = replaced
  request.log.info(
    { campaignId, rows: audience.rows, taken: audience.taken, skipped: audience.skipped },
    'campaign audience uploaded',
  )
  return { campaignId: campaign.id, status: 'ready', audience }
}
