import { API_KEY_STATUSES, APP_ENVS } from '@dispatch/contracts'
import { pgEnum } from 'drizzle-orm/pg-core'

export const apiKeyStatus = pgEnum('api_key_status', API_KEY_STATUSES)
export const appEnv = pgEnum('app_env', APP_ENVS)
