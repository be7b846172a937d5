import { parseArgs } from 'node:util'
import {
  type InboundKind,
  type InboundOptions,
  type InboundSender,
  inboundMessage,
} from './whatsapp-inbound.ts'
import { messageWebhook, signWebhook } from './whatsapp-server.ts'

export const REPLY_USAGE = `usage: WHATSAPP_APP_SECRET=… pnpm fake:reply <+phone | BSUID> [kind] [text]

  pnpm fake:reply +5511987654321 "Tuesday works"            a text
  pnpm fake:reply +5511987654321 --location -23.56,-46.65 "Office"
  pnpm fake:reply +5511987654321 --button confirm "Confirm"  taps a reply button (its id, its title)
  pnpm fake:reply +5511987654321 --list tue-10 "10:00"       picks a list row (its id, its title)
  pnpm fake:reply +5511987654321 --quick-reply STOP "Stop"   taps a template's quick-reply button
  pnpm fake:reply +5511987654321 --react wamid.… "👍"        reacts to a message
  pnpm fake:reply +5511987654321 --image "a caption"         sends a photo (the fake serves its bytes)
  pnpm fake:reply +5511987654321 --document|--video|--audio|--sticker|--contacts
  pnpm fake:reply BR.1502576394655843 --username ana "hi"    from a user known only by username
  options: --user-id <BSUID> (with a phone: the user is known by both), --quote <wamid> (quotes a message)`

/** What `pnpm fake:reply …` asks for: who writes, and the item of `messages[]` they send. */
export function readReply(args: string[]): {
  sender: InboundSender
  kind: InboundKind
  options: InboundOptions
} {
  // Coordinates start with a minus: `--location -23.5,-46.6` is read as `--location=-23.5,-46.6`.
  const joined = args.flatMap((arg, i) =>
    arg === '--location' ? [] : args[i - 1] === '--location' ? [`--location=${arg}`] : [arg],
  )
  const { values, positionals } = parseArgs({
    args: joined,
    allowPositionals: true,
    options: {
      location: { type: 'string' },
      button: { type: 'string' },
      list: { type: 'string' },
      'quick-reply': { type: 'string' },
      react: { type: 'string' },
      image: { type: 'boolean' },
      document: { type: 'boolean' },
      video: { type: 'boolean' },
      audio: { type: 'boolean' },
      sticker: { type: 'boolean' },
      contacts: { type: 'boolean' },
      username: { type: 'string' },
      'user-id': { type: 'string' },
      quote: { type: 'string' },
    },
  })
  const [who, ...words] = positionals
  const text = words.join(' ') || undefined
  const sender: InboundSender = {}
  if (who && /^\+?[1-9][0-9]{7,14}$/.test(who)) sender.phone = who.startsWith('+') ? who : `+${who}`
  else if (who && /^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$/.test(who)) sender.userId = who
  else
    throw new Error(
      `who writes: an E.164 phone or a BSUID (like BR.1502576394655843), not ${JSON.stringify(who)}`,
    )
  if (values['user-id']) sender.userId = values['user-id']
  if (values.username) sender.username = values.username
  const options: InboundOptions = {
    ...(text === undefined ? {} : { text }),
    ...(values.quote ? { quotes: values.quote } : {}),
  }
  const choose = (kind: InboundKind, extra: InboundOptions = {}) => ({
    sender,
    kind,
    options: { ...options, ...extra },
  })
  if (values.location) {
    const [latitude, longitude] = values.location.split(',').map(Number)
    if (!Number.isFinite(latitude) || !Number.isFinite(longitude))
      throw new Error('--location takes latitude,longitude')
    return choose('location', { latitude: latitude as number, longitude: longitude as number })
  }
  if (values.button) return choose('button_reply', { id: values.button })
  if (values.list) return choose('list_reply', { id: values.list })
  if (values['quick-reply']) return choose('quick_reply', { id: values['quick-reply'] })
  if (values.react) return choose('reaction', { id: values.react })
  for (const kind of ['image', 'document', 'video', 'audio', 'sticker', 'contacts'] as const) {
    if (values[kind]) return choose(kind)
  }
  if (text === undefined) throw new Error('a text reply needs its text')
  return choose('text')
}

/**
 * Posts one message from the fake customer to the API's webhook, signed as Meta signs it. A media
 * kind first gives its bytes to the running fake (`POST /_fake/media`), so the API can download it.
 */
export async function sendFakeReply(
  args: string[],
  env: { phoneNumberId: string; webhookUrl: string; appSecret: string; fakeUrl: string },
): Promise<string> {
  const { sender, kind, options } = readReply(args)
  if (['image', 'document', 'video', 'audio', 'sticker'].includes(kind)) {
    options.id = await registerFakeMedia(env.fakeUrl, kind)
  }
  const message = inboundMessage(kind, sender, options)
  const body = JSON.stringify(messageWebhook(env.phoneNumberId, message))
  const res = await fetch(env.webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, env.appSecret) },
    body,
  })
  const from = [sender.phone, sender.userId && `user ${sender.userId}`].filter(Boolean).join(', ')
  return `${message.type} ${message.id} from ${from} to business number ${env.phoneNumberId} → ${res.status}`
}

/** A small file of the kind's type, as a customer's phone would send it (a 1×1 JPEG for a photo). */
const SAMPLES: Record<string, { mimeType: string; base64: string }> = {
  image: {
    mimeType: 'image/jpeg',
    base64:
      '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wAALCAABAAEBAREA/8QAFAABAAAAAAAAAAAAAAAAAAAAA//EABQQAQAAAAAAAAAAAAAAAAAAAAD/2gAIAQEAAD8AN//Z',
  },
  document: {
    mimeType: 'application/pdf',
    base64: Buffer.from('%PDF-1.4\n%fake receipt\n%%EOF\n').toString('base64'),
  },
  video: {
    mimeType: 'video/mp4',
    base64: Buffer.from('\0\0\0\x18ftypmp42\0\0\0\0mp42isom').toString('base64'),
  },
  audio: { mimeType: 'audio/ogg', base64: Buffer.from('OggS\0\x02fake-opus').toString('base64') },
  sticker: { mimeType: 'image/webp', base64: Buffer.from('RIFF\x1a\0\0\0WEBPVP8 fake').toString('base64') },
}

async function registerFakeMedia(fakeUrl: string, kind: string): Promise<string> {
  const sample = SAMPLES[kind] as { mimeType: string; base64: string }
  const res = await fetch(`${fakeUrl}/_fake/media`, {
    method: 'POST',
    headers: { 'content-type': sample.mimeType },
    body: Buffer.from(sample.base64, 'base64'),
  })
  if (!res.ok) throw new Error(`the fake did not take the ${kind}: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { id: string }).id
}
