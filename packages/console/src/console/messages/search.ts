import { type MessageStatus, type MessageType, OVERVIEW_RANGES } from '@dispatch/contracts'
import { isRange } from '../../ui/range-picker.tsx'

/**
 * The message search's fields, kept in the address (so a search can be linked and reloaded).
 * `range` (`1h`, `24h`, `7d`) is a span back from now, read afresh at each request; `startDate` and
 * `endDate` a fixed window, and a search names one or the other.
 */
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
  'range',
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
  return withOneWindow(found)
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
  return withOneWindow(found)
}

/** A fixed window (From or Until given) wins over a span; a span not one of the three is dropped. */
function withOneWindow(search: MessageSearch): MessageSearch {
  const { range, ...rest } = search
  if (!isRange(range) || rest.startDate || rest.endDate) return rest
  return { ...rest, range }
}

export const toAddress = (search: MessageSearch) => {
  const query = new URLSearchParams(search as Record<string, string>).toString()
  return query ? `?${query}` : ''
}

/** The search as the API's query: statuses and types as arrays, a span as its start from `now`. */
export function toQuery(search: MessageSearch, now = Date.now()) {
  const { status, type, channel, range, ...rest } = search
  return {
    ...rest,
    ...(isRange(range)
      ? { startDate: new Date(now - OVERVIEW_RANGES[range].spanSeconds * 1000).toISOString() }
      : {}),
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
