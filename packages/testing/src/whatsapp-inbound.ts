import { randomBytes } from 'node:crypto'

/**
 * A user's message to a business number, as Meta puts it in `messages[]`, for every kind the
 * Cloud API delivers: what the tests and `pnpm fake:reply` post to Dispatch's webhook.
 */
export const INBOUND_KINDS = [
  'text',
  'image',
  'document',
  'audio',
  'video',
  'sticker',
  'location',
  'contacts',
  'quick_reply',
  'button_reply',
  'list_reply',
  'reaction',
] as const
export type InboundKind = (typeof INBOUND_KINDS)[number]

/** Who wrote: a phone (E.164), a BSUID, or both, and a username when the user has one. */
export interface InboundSender {
  phone?: string
  userId?: string
  username?: string
}

export interface InboundOptions {
  /** The text, caption, button title or emoji, by kind. */
  text?: string
  /** A reply or button's id; a media id; the wamid reacted to. */
  id?: string
  /** The wamid of the message this one quotes (`context`). */
  quotes?: string
  latitude?: number
  longitude?: number
  at?: number
}

const media = (kind: string, mimeType: string, options: InboundOptions, extra: object = {}) => ({
  [kind]: {
    id: options.id ?? String(1_000_000_000_000_000n + BigInt(`0x${randomBytes(6).toString('hex')}`)),
    mime_type: mimeType,
    sha256: randomBytes(32).toString('base64'),
    ...extra,
  },
})

function bodyOf(kind: InboundKind, o: InboundOptions): { type: string } & Record<string, unknown> {
  switch (kind) {
    case 'text':
      return { type: 'text', text: { body: o.text ?? 'hi' } }
    case 'image':
      return { type: 'image', ...media('image', 'image/jpeg', o, o.text ? { caption: o.text } : {}) }
    case 'document':
      return {
        type: 'document',
        ...media('document', 'application/pdf', o, {
          filename: 'receipt.pdf',
          ...(o.text ? { caption: o.text } : {}),
        }),
      }
    case 'audio':
      return { type: 'audio', ...media('audio', 'audio/ogg; codecs=opus', o, { voice: true }) }
    case 'video':
      return { type: 'video', ...media('video', 'video/mp4', o, o.text ? { caption: o.text } : {}) }
    case 'sticker':
      return { type: 'sticker', ...media('sticker', 'image/webp', o, { animated: false }) }
    case 'location':
      return {
        type: 'location',
        location: {
          latitude: o.latitude ?? -23.5614,
          longitude: o.longitude ?? -46.6559,
          ...(o.text ? { name: o.text } : {}),
        },
      }
    case 'contacts':
      return {
        type: 'contacts',
        contacts: [
          {
            name: { formatted_name: o.text ?? 'Bia Souza', first_name: 'Bia' },
            phones: [{ phone: '+55 11 91234-5678', type: 'CELL', wa_id: '5511912345678' }],
          },
        ],
      }
    case 'quick_reply':
      return { type: 'button', button: { text: o.text ?? 'Stop promotions', payload: o.id ?? 'STOP' } }
    case 'button_reply':
      return {
        type: 'interactive',
        interactive: {
          type: 'button_reply',
          button_reply: { id: o.id ?? 'confirm', title: o.text ?? 'Confirm' },
        },
      }
    case 'list_reply':
      return {
        type: 'interactive',
        interactive: {
          type: 'list_reply',
          list_reply: { id: o.id ?? 'tue-10', title: o.text ?? '10:00' },
        },
      }
    case 'reaction':
      return { type: 'reaction', reaction: { message_id: o.id ?? 'wamid.unknown', emoji: o.text ?? '👍' } }
  }
}

/** One item of `messages[]`: the envelope, and the body under its type's key. */
export type InboundItem = {
  id: string
  timestamp: string
  type: string
  from?: string
  from_user_id?: string
  context?: { id: string }
} & Record<string, unknown>

/**
 * One item of `messages[]` from `sender`: `from` when the phone is known, `from_user_id` when the
 * BSUID is (Meta withholds the phone of a user known by username). `username` is picked up by
 * `messageWebhook` for the change's `contacts[]`.
 */
export function inboundMessage(
  kind: InboundKind,
  sender: InboundSender,
  options: InboundOptions = {},
): InboundItem {
  return {
    ...(sender.phone === undefined ? {} : { from: sender.phone.replace(/^\+/, '') }),
    ...(sender.userId === undefined ? {} : { from_user_id: sender.userId }),
    ...(sender.username === undefined ? {} : { username: sender.username }),
    id: `wamid.${randomBytes(12).toString('hex')}`,
    timestamp: String(Math.floor((options.at ?? Date.now()) / 1000)),
    ...(options.quotes ? { context: { id: options.quotes } } : {}),
    ...bodyOf(kind, options),
  }
}
