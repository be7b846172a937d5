/**
 * A message's channel and its SMS fallback in words (docs/fallback.md): what the pages show in
 * place of the API's codes, which stay in the search's values and in the API's answers.
 */

export const channelName = (channel: string | undefined) => (channel === 'sms' ? 'SMS' : 'WhatsApp')

const STATES: Record<string, string> = {
  decided: 'Decided, not sent yet',
  calling: 'Being handed to the SMS provider',
  sent: 'Sent: the SMS provider took it',
  failed: 'Not sent: the SMS provider refused it',
  unknown: 'Unknown: the SMS provider may have taken it (it is never sent again)',
  withdrawn: 'Withdrawn: WhatsApp delivered first',
}

/** The fallback's state as a sentence; an unknown state as the API says it. */
export const fallbackState = (state: string) => STATES[state] ?? state

/** The same, short, for a list's cell. */
export const fallbackStateShort = (state: string) => `SMS ${state === 'failed' ? 'not sent' : state}`

const REASONS: Record<string, string> = {
  whatsapp_undeliverable: 'WhatsApp could not deliver it',
  expired: 'Its validity ended before it went',
  not_delivered_in_time: 'WhatsApp reported no delivery in time',
}

/** Why the fallback was decided, with the platform's code when one. */
export const fallbackReason = (reason: string, code?: string | null) =>
  `${REASONS[reason] ?? reason}${code ? ` (${code})` : ''}`
