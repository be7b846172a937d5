import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { graphError, type ScriptedAnswer } from './graph-error.ts'
import { type CloudApiUpload, FakeMedia } from './whatsapp-media.ts'
import { messageRefusal } from './whatsapp-message-rules.ts'
import { type FakeTemplate, FakeTemplateCatalogs } from './whatsapp-templates.ts'

export { graphError, type ScriptedAnswer } from './graph-error.ts'
export type { CloudApiMediaRead, CloudApiUpload } from './whatsapp-media.ts'

/** One request the fake platform received. */
export interface CloudApiRequest {
  path: string
  headers: IncomingHttpHeaders
  body: Record<string, unknown>
  /** The message id Dispatch put in `biz_opaque_callback_data`. */
  messageId: string | undefined
  /** The `wamid` the fake answered with, when it accepted the message. */
  platformMessageId: string | undefined
  /** When it arrived (ms since the epoch). */
  receivedAt: number
}

/** A webhook as Meta sends it: one account entry, one `messages` change of this value. */
const changeWebhook = (phoneNumberId: string, value: Record<string, unknown>) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: 'WABA_ID',
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550001111', phone_number_id: phoneNumberId },
            ...value,
          },
        },
      ],
    },
  ],
})

/** A status webhook as Meta sends it, for the business number the tests use: these statuses. */
export const statusWebhook = (...statuses: Array<Record<string, unknown>>) =>
  changeWebhook('106540352242922', { statuses })

/**
 * A messages webhook as Meta sends it, for the business number `phoneNumberId`: these messages
 * from users, and a contact for each sender.
 */
export const messageWebhook = (phoneNumberId: string, ...messages: unknown[]) =>
  changeWebhook(phoneNumberId, { contacts: contactsOf(messages), messages })

type Sender = { from?: unknown; from_user_id?: unknown; username?: unknown } | null
/**
 * One contact per sender, as Meta names it: `wa_id` when the phone is known, `user_id` (the BSUID)
 * when given, and `profile.username` for a user who has one. A message's `username` (a test's
 * shorthand, not Meta's) goes to its contact and is taken off the message.
 */
function contactsOf(messages: unknown[]) {
  const contacts = new Map<string, Record<string, unknown>>()
  for (const item of messages) {
    // Tests also post items that are not objects at all, to see them skipped.
    const message = (item !== null && typeof item === 'object' ? item : null) as Sender
    const { from, from_user_id: userId, username } = message ?? {}
    if (message && 'username' in message) delete message.username
    const key = `${String(from)}|${String(userId)}`
    if (contacts.has(key)) continue
    contacts.set(key, {
      profile: { name: 'A User', ...(username === undefined ? {} : { username }) },
      ...(from === undefined ? {} : { wa_id: from }),
      ...(userId === undefined ? {} : { user_id: userId }),
    })
  }
  return [...contacts.values()]
}

/** `X-Hub-Signature-256` of these exact bytes under the app secret. */
export const signWebhook = (body: string, appSecret: string) =>
  `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`

export interface FakeWhatsApp {
  /** Base URL to use as WHATSAPP_API_URL. */
  url: string
  requests: CloudApiRequest[]
  /** Read receipts and typing indicators (`status: "read"`), apart from the sends. */
  reads: CloudApiRequest[]
  /** Media uploads, apart from the sends above. */
  uploads: CloudApiUpload[]
  /** Accepted sends per message id: more than one means a message went out twice. */
  sendsOf(messageId: string): number
  /** The next answers, in order; after them the fake accepts every message again. */
  script(...answers: ScriptedAnswer[]): void
  /** Drops the scripted answers not used yet. */
  clearScript(): void
  /** The next answers to media uploads, in order; after them the fake takes every upload again. */
  scriptUploads(...answers: ScriptedAnswer[]): void
  /**
   * Media to download (`GET /{media-id}`, then its url), as an inbound message's: `add` answers
   * its id; uploads the fake took are there too. `reads` lists the lookups and downloads.
   */
  media: FakeMedia
  /**
   * Per business number: the only access token it takes (others get 190, as Meta answers an expired
   * token), and an answer it gives every send until cleared (a 130429 loop). Unset: anything goes.
   */
  number(
    phoneNumberId: string,
    behaviour: { token?: string | undefined; answer?: ScriptedAnswer | undefined },
  ): void
  /** Accepted sends from one business number, in arrival order. */
  sentFrom(phoneNumberId: string): CloudApiRequest[]
  /**
   * Template catalogs per WhatsApp Business Account (`GET /{waba-id}/message_templates`, paged),
   * and which numbers belong to which account: template sends from a linked number are refused as
   * Meta refuses them (132001, 132000, 132015, 132016).
   */
  templates: FakeTemplateCatalogs
  /** `GET /{waba-id}/message_templates` requests received, in order. */
  templateReads: Array<{ url: URL; receivedAt: number }>
  /**
   * What `GET /{phone-number-id}?fields=…` answers for a number, beside its `id` (such as
   * `whatsapp_business_manager_messaging_limit: 'TIER_2K'`, its portfolio's messaging limit). A
   * number given nothing answers its `id` alone.
   */
  phoneNumberFields: Map<string, Record<string, unknown>>
  /** `GET /{phone-number-id}?fields=…` requests received, in order. */
  phoneNumberReads: Array<{ url: URL; authorization: string | undefined }>
  /** Latency added to every accepted message. */
  latencyMs: number
  close(): Promise<void>
}

/**
 * A local HTTP server that answers like the WhatsApp Cloud API's `POST /{phone-number-id}/messages`:
 * the success shape with a `wamid`, or Graph error bodies when scripted. It also takes
 * `POST /{phone-number-id}/media` uploads as the Cloud API does (multipart `file`, `type`,
 * `messaging_product=whatsapp`, bearer token) and answers `{ id }`.
 */
export async function startFakeWhatsApp(
  options: {
    latencyMs?: number
    port?: number
    onAccepted?: (request: CloudApiRequest) => void
    /** Recipients (`to`, digits) not on WhatsApp: sends to them are refused with 131026, as Meta does. */
    undeliverable?: (to: string) => boolean
    /** How many bytes of each upload `uploads[].file.bytes` keeps (32 MiB by default). */
    keepUploadBytes?: number
    /** A template's status changed through `POST /_fake/templates/{waba-id}/status` (the CLI's). */
    onTemplateStatus?: (
      wabaId: string,
      template: FakeTemplate,
      event: string,
      reason: string | undefined,
    ) => void
  } = {},
): Promise<FakeWhatsApp> {
  const requests: CloudApiRequest[] = []
  const reads: CloudApiRequest[] = []
  const queue: ScriptedAnswer[] = []
  const media = new FakeMedia({ keepUploadBytes: options.keepUploadBytes })
  const numbers = new Map<string, { token?: string | undefined; answer?: ScriptedAnswer | undefined }>()
  const templates = new FakeTemplateCatalogs()
  const templateReads: Array<{ url: URL; receivedAt: number }> = []
  const fake = { latencyMs: options.latencyMs ?? 0 }
  /** What the number's own behaviour answers, if it has one for this request. */
  const numberAnswer = (recorded: CloudApiRequest): ScriptedAnswer | undefined => {
    const behaviour = numbers.get(phoneNumberIdOf(recorded.path))
    if (!behaviour) return undefined
    if (behaviour.token !== undefined && recorded.headers.authorization !== `Bearer ${behaviour.token}`) {
      return graphError(190, 'Error validating access token: Session has expired', 401)
    }
    return behaviour.answer
  }
  const phoneNumberFields = new Map<string, Record<string, unknown>>()
  const phoneNumberReads: FakeWhatsApp['phoneNumberReads'] = []
  const server = createServer((req, res) => {
    const numberRead = req.method === 'GET' ? PHONE_NUMBER_FIELDS_PATH.exec(req.url ?? '') : null
    if (numberRead) {
      req.resume()
      const url = new URL(req.url ?? '', `http://${req.headers.host}`)
      phoneNumberReads.push({ url, authorization: req.headers.authorization })
      const id = numberRead[1] as string
      const asked = (url.searchParams.get('fields') ?? '').split(',')
      const known = phoneNumberFields.get(id) ?? {}
      const fields = Object.fromEntries(Object.entries(known).filter(([name]) => asked.includes(name)))
      void writeAnswer(
        res,
        req.headers.authorization?.startsWith('Bearer ')
          ? { status: 200, body: { ...fields, id } }
          : graphError(190, 'Error validating access token: Session has expired', 401),
      )
      return
    }
    if (media.handle(req, res)) return
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const templatesPath = req.method === 'GET' ? TEMPLATES_PATH.exec(req.url ?? '') : null
      if (templatesPath) {
        const url = new URL(req.url ?? '', `http://${req.headers.host}`)
        templateReads.push({ url, receivedAt: Date.now() })
        await writeAnswer(res, templates.page(templatesPath[1] as string, url, req.headers.authorization))
        return
      }
      const control = req.method === 'POST' ? TEMPLATE_STATUS_CONTROL.exec(req.url ?? '') : null
      if (control) {
        await writeAnswer(res, changeTemplateStatus(control[1] as string, Buffer.concat(chunks)))
        return
      }
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        // Recorded as empty; the answer below says what was wrong.
      }
      const recorded: CloudApiRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body,
        messageId:
          typeof body.biz_opaque_callback_data === 'string' ? body.biz_opaque_callback_data : undefined,
        platformMessageId: undefined,
        receivedAt: Date.now(),
      }
      if (body.status === 'read') {
        // A read receipt (and typing indicator): not a message, so neither recorded nor scripted.
        reads.push(recorded)
        await writeAnswer(res, numberAnswer(recorded) ?? markRead(recorded))
        return
      }
      requests.push(recorded)
      const answer: ScriptedAnswer =
        numberAnswer(recorded) ??
        queue.shift() ??
        (typeof body.to === 'string' && options.undeliverable?.(body.to)
          ? graphError(131026, 'Message undeliverable')
          : undefined) ??
        templates.refusal(phoneNumberIdOf(recorded.path), body) ??
        messageRefusal(body) ??
        accept(recorded, fake.latencyMs)
      if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
      if (!res.writable) return
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
      if (recorded.platformMessageId) options.onAccepted?.(recorded)
    })
  })
  /** The fake's own control route: Meta changing a template's status, then telling the app. */
  function changeTemplateStatus(wabaId: string, bytes: Buffer): ScriptedAnswer {
    let change: { name?: string; language?: string; event?: string; reason?: string }
    try {
      change = JSON.parse(bytes.toString('utf8'))
    } catch {
      return { status: 400, body: { error: 'a JSON body {name, language, event, reason?}' } }
    }
    const { name, language, event, reason } = change
    if (!name || !language || !event)
      return { status: 400, body: { error: 'name, language and event are required' } }
    try {
      const template = templates.update(wabaId, name, language, {
        status: event,
        ...(reason ? { rejected_reason: reason } : {}),
      })
      options.onTemplateStatus?.(wabaId, template, event, reason)
      return { status: 200, body: template }
    } catch (error) {
      return { status: 404, body: { error: (error as Error).message } }
    }
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v21.0`,
    requests,
    reads,
    uploads: media.uploads,
    media,
    sendsOf: (messageId) => requests.filter((r) => r.messageId === messageId && r.platformMessageId).length,
    script: (...answers) => queue.push(...answers),
    clearScript: () => {
      queue.length = 0
    },
    scriptUploads: (...answers) => media.scriptUploads(...answers),
    number: (phoneNumberId, behaviour) => {
      numbers.set(phoneNumberId, { ...numbers.get(phoneNumberId), ...behaviour })
    },
    templates,
    templateReads,
    phoneNumberFields,
    phoneNumberReads,
    sentFrom: (phoneNumberId) =>
      requests.filter((r) => r.platformMessageId && phoneNumberIdOf(r.path) === phoneNumberId),
    get latencyMs() {
      return fake.latencyMs
    },
    set latencyMs(value: number) {
      fake.latencyMs = value
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** `/v21.0/{phone-number-id}/messages` → the phone number id. */
const phoneNumberIdOf = (path: string) => path.split('/').at(-2) ?? ''

function accept(request: CloudApiRequest, latencyMs: number): ScriptedAnswer {
  if (!request.headers.authorization?.startsWith('Bearer ')) {
    return graphError(190, 'Error validating access token', 401)
  }
  const { to, recipient } = request.body
  if (
    request.body.messaging_product !== 'whatsapp' ||
    (typeof to !== 'string' && typeof recipient !== 'string')
  ) {
    return graphError(100, 'Invalid parameter')
  }
  const wamid = `wamid.${randomBytes(12).toString('hex')}`
  request.platformMessageId = wamid
  return {
    status: 200,
    delayMs: latencyMs,
    body: {
      messaging_product: 'whatsapp',
      // `to` wins over `recipient` (a BSUID), as on the Cloud API.
      contacts: [
        typeof to === 'string' ? { input: to, wa_id: to } : { input: recipient, user_id: recipient },
      ],
      messages: [{ id: wamid }],
    },
  }
}

/** A read receipt for a message the user sent: `{success: true}`, as the Cloud API answers it. */
function markRead(request: CloudApiRequest): ScriptedAnswer {
  if (!request.headers.authorization?.startsWith('Bearer ')) {
    return graphError(190, 'Error validating access token', 401)
  }
  const { messaging_product: product, message_id: messageId, typing_indicator: typing } = request.body
  if (product !== 'whatsapp' || typeof messageId !== 'string' || !messageId.startsWith('wamid.')) {
    return graphError(
      100,
      'Invalid parameter',
      400,
      'message_id must be the wamid of a message the user sent',
    )
  }
  if (typing !== undefined && (typing as { type?: unknown } | null)?.type !== 'text') {
    return graphError(100, 'Invalid parameter', 400, 'typing_indicator.type must be "text"')
  }
  return { status: 200, body: { success: true } }
}

/** The fake's control route (not Meta's): `POST /_fake/templates/{waba-id}/status`. */
const TEMPLATE_STATUS_CONTROL = /^\/_fake\/templates\/([0-9]+)\/status$/

/** `GET /v21.0/{waba-id}/message_templates`, an account's template list. */
const TEMPLATES_PATH = /^(?:\/v[0-9.]+)?\/([0-9]+)\/message_templates(?:\?.*)?$/
/** `GET /v21.0/{phone-number-id}?fields=…`, a number's fields (a media lookup asks for none). */
const PHONE_NUMBER_FIELDS_PATH =
  /^(?:\/v[0-9.]+)?\/([0-9]+)\?(?:.*&)?fields=[^&]*whatsapp_business_manager_messaging_limit/

async function writeAnswer(res: ServerResponse, answer: ScriptedAnswer) {
  if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
  if (!res.writable) return
  res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
  res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
}
