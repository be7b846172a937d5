import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

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

/** A scripted answer: a status, an optional JSON body and headers, after an optional delay. */
export interface ScriptedAnswer {
  status: number
  body?: unknown
  headers?: Record<string, string>
  delayMs?: number
}

/** The Graph API's error body. */
export const graphError = (code: number, message: string, status = 400): ScriptedAnswer => ({
  status,
  body: { error: { message, type: 'OAuthException', code, error_subcode: 2494010, fbtrace_id: 'AbCdEf123' } },
})

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
  changeWebhook(phoneNumberId, {
    contacts: [...new Set(messages.map((m) => (m as { from?: unknown } | null)?.from))].map((from) => ({
      profile: { name: 'A User' },
      wa_id: from,
    })),
    messages,
  })

/** `X-Hub-Signature-256` of these exact bytes under the app secret. */
export const signWebhook = (body: string, appSecret: string) =>
  `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`

export interface FakeWhatsApp {
  /** Base URL to use as WHATSAPP_API_URL. */
  url: string
  requests: CloudApiRequest[]
  /** Accepted sends per message id: more than one means a message went out twice. */
  sendsOf(messageId: string): number
  /** The next answers, in order; after them the fake accepts every message again. */
  script(...answers: ScriptedAnswer[]): void
  /** Drops the scripted answers not used yet. */
  clearScript(): void
  /** Latency added to every accepted message. */
  latencyMs: number
  close(): Promise<void>
}

/**
 * A local HTTP server that answers like the WhatsApp Cloud API's `POST /{phone-number-id}/messages`:
 * the success shape with a `wamid`, or Graph error bodies when scripted.
 */
export async function startFakeWhatsApp(
  options: { latencyMs?: number; port?: number; onAccepted?: (request: CloudApiRequest) => void } = {},
): Promise<FakeWhatsApp> {
  const requests: CloudApiRequest[] = []
  const queue: ScriptedAnswer[] = []
  const fake = { latencyMs: options.latencyMs ?? 0 }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
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
      requests.push(recorded)
      const scripted = queue.shift()
      const answer: ScriptedAnswer = scripted ?? accept(recorded, fake.latencyMs)
      if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
      if (!res.writable) return
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
      if (recorded.platformMessageId) options.onAccepted?.(recorded)
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v21.0`,
    requests,
    sendsOf: (messageId) => requests.filter((r) => r.messageId === messageId && r.platformMessageId).length,
    script: (...answers) => queue.push(...answers),
    clearScript: () => {
      queue.length = 0
    },
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

function accept(request: CloudApiRequest, latencyMs: number): ScriptedAnswer {
  if (!request.headers.authorization?.startsWith('Bearer ')) {
    return graphError(190, 'Error validating access token', 401)
  }
  if (request.body.messaging_product !== 'whatsapp' || typeof request.body.to !== 'string') {
    return graphError(100, 'Invalid parameter')
  }
  const wamid = `wamid.${randomBytes(12).toString('hex')}`
  request.platformMessageId = wamid
  return {
    status: 200,
    delayMs: latencyMs,
    body: {
      messaging_product: 'whatsapp',
      contacts: [{ input: request.body.to, wa_id: request.body.to }],
      messages: [{ id: wamid }],
    },
  }
}
