import type { MessageStatus, MessageType } from '@dispatch/contracts'
/** The message search's fields, kept in the address (so a search can be linked and reloaded). */
export const MESSAGE_FILTERS = [
  'phone',
  'apiKeyId',
  'status',
  'type',
  'batchId',
  'clientReference',
  'errorCode',
  'channel',
  'startDate',
  'endDate',
] as const
export type MessageFilter = (typeof MESSAGE_FILTERS)[number]
export type MessageSearch = Partial<Record<MessageFilter, string>>

export function searchFromAddress(search: string): MessageSearch {
  const params = new URLSearchParams(search)
  const found: MessageSearch = {}
  for (const name of MESSAGE_FILTERS) {
    const value = params.get(name)
    if (value) found[name] = value
  }
  return found
}

export function searchFromForm(form: FormData): MessageSearch {
  const found: MessageSearch = {}
  for (const name of MESSAGE_FILTERS) {
    const value = form.get(name)
    if (typeof value === 'string' && value.trim() !== '') {
      // datetime-local fields answer local time; the API takes an instant.
      found[name] = name.endsWith('Date') ? new Date(value).toISOString() : value.trim()
    }
  }
  return found
}

export const toAddress = (search: MessageSearch) => {
  const query = new URLSearchParams(search as Record<string, string>).toString()
  return query ? `?${query}` : ''
}

/** The search as the API's query: statuses and types as arrays. */
export function toQuery(search: MessageSearch) {
  const { status, type, channel, ...rest } = search
  return {
    ...rest,
    ...(channel === 'sms' || channel === 'whatsapp' ? { channel: channel as 'sms' | 'whatsapp' } : {}),
    ...(status ? { status: [status as MessageStatus] } : {}),
    ...(type ? { type: [type as MessageType] } : {}),
  }
}

/** A datetime-local field's value for an instant (local time, to the minute). */
export function localInput(iso: string | undefined) {
  if (!iso) return ''
  const date = new Date(iso)
  const offset = date.getTimezoneOffset() * 60_000
  return new Date(date.getTime() - offset).toISOString().slice(0, 16)
}
