import {
  API_KEY_STATUSES,
  APP_ENVS,
  CAMPAIGN_STATUSES,
  MESSAGE_STATUSES,
  MESSAGE_TYPES,
  MESSAGING_LIMIT_POLICIES,
  SENDER_STATES,
  SERVICE_WINDOW_POLICIES,
} from '@dispatch/contracts'
import { pgEnum } from 'drizzle-orm/pg-core'

export const apiKeyStatus = pgEnum('api_key_status', API_KEY_STATUSES)
export const appEnv = pgEnum('app_env', APP_ENVS)
export const messageType = pgEnum('message_type', MESSAGE_TYPES)
export const messageStatus = pgEnum('message_status', MESSAGE_STATUSES)
export const senderState = pgEnum('sender_state', SENDER_STATES)
export const serviceWindowPolicy = pgEnum('service_window_policy', SERVICE_WINDOW_POLICIES)
export const messagingLimitPolicy = pgEnum('messaging_limit_policy', MESSAGING_LIMIT_POLICIES)
export const campaignStatus = pgEnum('campaign_status', CAMPAIGN_STATUSES)
export const campaignRecipientRowState = pgEnum('campaign_recipient_state', [
  'pending',
  'fed',
  'skipped',
  'canceled',
])
