import {
  type InboundContent,
  isUserId,
  WhatsAppInboundBodies,
  WhatsAppInboundMessage,
  type WhatsAppInboundType,
  WhatsAppMetadata,
  type WhatsAppWebhook,
} from '@dispatch/contracts'
import type { InboundMessage } from '@dispatch/db'
import type { Static, TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { judgeItem, type SkippedStatus } from './whatsapp-statuses.ts'

type Bodies = typeof WhatsAppInboundBodies
type Body<T extends WhatsAppInboundType> = Static<Bodies[T]>

const isMessage = Compile(WhatsAppInboundMessage)
const isMetadata = Compile(WhatsAppMetadata)
// A Map, not an object: a `type` such as "constructor" or "__proto__" must not find anything.
const bodyChecks = new Map(
  Object.entries(WhatsAppInboundBodies).map(([type, schema]) => [type, Compile(schema as TSchema)]),
)

/** The object without its undefined values: optional fields are absent, not `undefined`, in JSON. */
const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T

const media = (body: Body<'image'>): InboundContent => ({
  media: defined({
    id: body.id,
    mimeType: body.mime_type,
    sha256: body.sha256,
    caption: body.caption,
    filename: body.filename,
  }),
})

/** Each known type's body, normalized; a string says why an item of that type is malformed. */
const normalize: { [T in WhatsAppInboundType]: (body: Body<T>) => InboundContent | string } = {
  text: (body) => ({ text: body.body }),
  image: media,
  document: media,
  audio: media,
  video: media,
  sticker: media,
  button: (body) => ({ button: { text: body.text, payload: body.payload } }),
  interactive: (body) => {
    if (body.type === 'button_reply') {
      return body.button_reply
        ? { button: { id: body.button_reply.id, title: body.button_reply.title } }
        : '/interactive/button_reply is required'
    }
    if (body.type === 'list_reply') {
      const reply = body.list_reply
      return reply
        ? { listReply: defined({ id: reply.id, title: reply.title, description: reply.description }) }
        : '/interactive/list_reply is required'
    }
    return { unsupported: true }
  },
  location: (body) => ({
    location: defined({
      latitude: body.latitude,
      longitude: body.longitude,
      name: body.name,
      address: body.address,
    }),
  }),
  reaction: (body) => ({ reaction: { emoji: body.emoji ?? null, messageId: body.message_id } }),
  contacts: (body) => ({ contacts: body as Array<Record<string, unknown>> }),
}

/** One of a change's `contacts[]`, as far as it names the user. */
interface ContactEntry {
  wa_id?: unknown
  user_id?: unknown
  profile?: { username?: unknown }
}
const text = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : undefined)

/**
 * What a change's `contacts[]` adds about a message's sender: the username, and the phone or BSUID
 * the message itself lacks (Meta names the sender there by `wa_id` and `user_id`).
 */
function contactOf(contacts: unknown[] | undefined, item: WhatsAppInboundMessage) {
  for (const raw of contacts ?? []) {
    const contact = (raw ?? {}) as ContactEntry
    const waId = text(contact.wa_id)
    const userId = text(contact.user_id)
    if ((item.from && waId === item.from) || (item.from_user_id && userId === item.from_user_id)) {
      return {
        username: text(contact.profile?.username) ?? null,
        phone: waId && /^[1-9][0-9]{7,14}$/.test(waId) ? `+${waId}` : undefined,
        userId: userId && isUserId(userId) ? userId : undefined,
      }
    }
  }
  return undefined
}

/** The content of an item whose envelope is valid, or why its body is not. */
function readContent(item: WhatsAppInboundMessage): InboundContent | string {
  const check = bodyChecks.get(item.type)
  // A type Dispatch does not read (contacts, order, system, unsupported…) is kept, not dropped.
  if (!check) return { unsupported: true }
  const body = (item as Record<string, unknown>)[item.type]
  if (!check.Check(body)) {
    const [problem] = check.Errors(body)
    return `/${item.type}${problem?.instancePath ?? ''} ${problem?.message ?? 'is invalid'}`
  }
  return (normalize[item.type as WhatsAppInboundType] as (body: unknown) => InboundContent | string)(body)
}

/**
 * The replies a delivery carries, each item checked on its own like the statuses: one bad item
 * (missing id or sender, a time out of the window, a malformed body for its type, no business
 * number on its change) is skipped and reported by position, the others are still read.
 */
export function readInboundMessages(
  body: WhatsAppWebhook,
  now: Date,
): { messages: InboundMessage[]; skipped: SkippedStatus[] } {
  const messages: InboundMessage[] = []
  const skipped: SkippedStatus[] = []
  body.entry.forEach((entry, e) => {
    entry.changes.forEach((change, c) => {
      const metadata = change.value.metadata
      const phoneNumberId = isMetadata.Check(metadata) ? metadata.phone_number_id : undefined
      change.value.messages?.forEach((raw, m) => {
        const at = `entry[${e}].changes[${c}].messages[${m}]`
        if (!phoneNumberId) {
          skipped.push({ at, reason: 'metadata.phone_number_id is missing or invalid' })
          return
        }
        const judged = judgeItem(isMessage, raw, now)
        if ('reason' in judged) {
          skipped.push({ at, reason: judged.reason })
          return
        }
        const { item, time } = judged
        if (item.from === undefined && item.from_user_id === undefined) {
          skipped.push({ at, reason: 'has neither from nor from_user_id' })
          return
        }
        const content = readContent(item)
        if (typeof content === 'string') {
          skipped.push({ at, reason: content })
          return
        }
        const contact = contactOf(change.value.contacts, item)
        messages.push({
          platformMessageId: item.id,
          phoneNumberId,
          phone: item.from === undefined ? (contact?.phone ?? null) : `+${item.from}`,
          userId: item.from_user_id ?? contact?.userId ?? null,
          username: contact?.username ?? null,
          type: item.type,
          content,
          contextId: item.context?.id ?? null,
          receivedAt: time,
        })
      })
    })
  })
  return { messages, skipped }
}
