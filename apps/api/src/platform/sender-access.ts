import { findSenderByPhoneNumberId } from '@dispatch/db'
import { createSecretBox } from '@dispatch/runtime'
import type { ApiDeps } from '../deps.ts'

/** What it takes to call the Cloud API as one business number. */
export interface SenderAccess {
  /** `{WHATSAPP_API_URL}/{phone-number-id}`: the number's own Graph paths start here. */
  numberUrl: string
  apiUrl: string
  accessToken: string
}

/**
 * The Cloud API access of the business number `phoneNumberId`, for the calls the API makes itself
 * (read receipts, inbound media): the environment's token for its own number, else the sealed
 * token of the sender an admin added for it. Undefined with the sandbox platform, or for a number
 * with no usable token.
 */
export function createSenderAccess(deps: Pick<ApiDeps, 'db' | 'config'>) {
  const { db, config } = deps
  const box = createSecretBox(config)
  const apiUrl = config.WHATSAPP_API_URL.replace(/\/+$/, '')
  const access = (phoneNumberId: string, accessToken: string): SenderAccess => ({
    numberUrl: `${apiUrl}/${phoneNumberId}`,
    apiUrl,
    accessToken,
  })
  return async (phoneNumberId: string): Promise<SenderAccess | undefined> => {
    if (config.platform !== 'whatsapp-cloud') return undefined
    if (phoneNumberId === config.WHATSAPP_PHONE_NUMBER_ID && config.WHATSAPP_ACCESS_TOKEN) {
      return access(phoneNumberId, config.WHATSAPP_ACCESS_TOKEN)
    }
    const sender = await findSenderByPhoneNumberId(db, phoneNumberId)
    if (!sender?.accessTokenCiphertext) return undefined
    try {
      return access(phoneNumberId, box.open(sender.accessTokenCiphertext))
    } catch {
      // Sealed under a key this process lacks (SECRETS_KEY): as good as no token; `secrets:rotate` says which.
      return undefined
    }
  }
}
