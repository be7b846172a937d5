import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { twilioSignature } from '@dispatch/runtime/sms'
import type { ScriptedAnswer } from './graph-error.ts'

/** One `POST …/Messages.json` the fake received, its form parameters decoded. */
export interface SmsApiRequest {
  path: string
  headers: IncomingHttpHeaders
  params: Record<string, string>
  /** The sid it answered with; undefined when it refused the request. */
  sid: string | undefined
  receivedAt: number
}

/** Twilio's error body: `{ code, message, more_info, status }`. */
export const twilioError = (code: number, message: string, status = 400): ScriptedAnswer => ({
  status,
  body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
})

/**
 * An answer that never comes: the fake takes the SMS (it counts as sent) and closes the connection,
 * as a provider whose answer was lost would.
 */
export const DROP_AFTER_TAKING = 'drop-after-taking' as const
type SmsScriptedAnswer = ScriptedAnswer | typeof DROP_AFTER_TAKING

/** A status callback as Twilio would post it: the URL it signs, the form body, its headers. */
export interface SignedSmsStatus {
  url: string
  params: Record<string, string>
  body: string
  headers: { 'content-type': string; 'x-twilio-signature': string }
}

export interface FakeSms {
  /** Base URL to use as SMS_API_URL. */
  url: string
  accountSid: string
  authToken: string
  requests: SmsApiRequest[]
  /** SMS taken for a number: more than one means it was texted twice. */
  sentTo(phone: string): SmsApiRequest[]
  /** The next answers, in order; after them the fake takes every SMS again. */
  script(...answers: SmsScriptedAnswer[]): void
  /**
   * The status callback of an SMS the fake took, signed with the auth token against its
   * `StatusCallback` URL (or `url`); `ErrorCode` for `undelivered` and `failed`.
   */
  statusCallback(
    sid: string,
    status: string,
    options?: { url?: string; errorCode?: string; authToken?: string; price?: string; priceUnit?: string },
  ): SignedSmsStatus
  /** Posts that callback to `target` (default: the signed URL itself), as Twilio would. */
  postStatus(
    sid: string,
    status: string,
    options?: { target?: string; url?: string; errorCode?: string; price?: string; priceUnit?: string },
  ): Promise<Response>
  /**
   * What `GET …/Messages/{Sid}.json` answers as an SMS's `price` (negative, as Twilio charges) and
   * `price_unit`: null for each SMS's first `unpricedReads` reads, as Twilio says before it priced
   * it; `price` null: never priced. Change it at any time.
   */
  pricing: { price: string | null; priceUnit: string; unpricedReads: number }
  /** How many times an SMS's record was read (`GET`). */
  reads(sid: string): number
  /** The settings that point the API or a worker at this fake (`SMS_*`), status callbacks to `statusCallbackUrl`. */
  env(statusCallbackUrl?: string): Record<string, string>
  close(): Promise<void>
}

/** The sender number the fake's SMS come from. */
const FAKE_SMS_FROM = '+15005550006'

const MESSAGES_PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/
const MESSAGE_PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/([^/]+)\.json$/

/**
 * A local HTTP server that answers like Twilio's Messages API: `POST
 * /2010-04-01/Accounts/{AccountSid}/Messages.json`, form-encoded, basic auth with the account SID
 * and auth token; `201` with `sid` and `status: "queued"`, or Twilio's error bodies (wrong
 * credentials 20003, missing `To` 21604, missing `From` 21603, or scripted). `GET
 * …/Messages/{Sid}.json` answers an SMS it took, with its price (`pricing`), else 20404.
 */
export async function startFakeSms(
  options: {
    accountSid?: string
    authToken?: string
    port?: number
    /** Told of each SMS it took, once answered. */
    onTaken?: (request: SmsApiRequest) => void
    /** The SMS's price its record answers (`pricing`); by default `-0.00750` USD, from the first read. */
    pricing?: Partial<FakeSms['pricing']>
  } = {},
): Promise<FakeSms> {
  const pricing = { price: '-0.00750', priceUnit: 'USD', unpricedReads: 0, ...options.pricing }
  const reads = new Map<string, number>()
  const accountSid = options.accountSid ?? `AC${randomBytes(16).toString('hex')}`
  const authToken = options.authToken ?? randomBytes(16).toString('hex')
  const requests: SmsApiRequest[] = []
  const queue: SmsScriptedAnswer[] = []
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const path = req.url ?? ''
      const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))
      const recorded: SmsApiRequest = {
        path,
        headers: req.headers,
        params,
        sid: undefined,
        receivedAt: Date.now(),
      }
      if (req.method === 'GET') return answerRecord(res, req.headers.authorization, path)
      const account = req.method === 'POST' ? MESSAGES_PATH.exec(path)?.[1] : undefined
      if (account === undefined)
        return writeAnswer(res, twilioError(20404, 'The requested resource was not found', 404))
      requests.push(recorded)
      if (account !== accountSid || req.headers.authorization !== expectedAuth) {
        return writeAnswer(res, twilioError(20003, 'Authenticate', 401))
      }
      if (!params.To) return writeAnswer(res, twilioError(21604, "A 'To' phone number is required."))
      if (!params.From && !params.MessagingServiceSid) {
        return writeAnswer(res, twilioError(21603, "A 'From' phone number is required."))
      }
      if (!params.Body) return writeAnswer(res, twilioError(21602, 'Message body is required.'))
      const scripted = queue.shift()
      if (scripted === DROP_AFTER_TAKING) {
        recorded.sid = newSid()
        res.socket?.destroy()
        return
      }
      if (scripted) return writeAnswer(res, scripted)
      recorded.sid = newSid()
      await writeAnswer(res, { status: 201, body: messageResource(accountSid, recorded.sid, params) })
      options.onTaken?.(recorded)
    })
  })
  /** `GET …/Messages/{Sid}.json`: the Message resource of an SMS it took, priced as `pricing` says. */
  const answerRecord = (res: ServerResponse, auth: string | undefined, path: string) => {
    const [, account, sid] = MESSAGE_PATH.exec(path) ?? []
    if (account !== accountSid || auth !== expectedAuth) {
      return writeAnswer(res, twilioError(20003, 'Authenticate', 401))
    }
    const request = requests.find((r) => r.sid !== undefined && r.sid === sid)
    if (!request || !sid)
      return writeAnswer(res, twilioError(20404, 'The requested resource was not found', 404))
    const read = (reads.get(sid) ?? 0) + 1
    reads.set(sid, read)
    const priced = pricing.price !== null && read > pricing.unpricedReads
    return writeAnswer(res, {
      status: 200,
      body: {
        ...messageResource(accountSid, sid, request.params),
        price: priced ? pricing.price : null,
        price_unit: pricing.priceUnit,
      },
    })
  }
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  const taken = (sid: string) => {
    const request = requests.find((r) => r.sid === sid)
    if (!request) throw new Error(`The fake SMS provider took no SMS ${sid}`)
    return request
  }
  const statusCallback: FakeSms['statusCallback'] = (sid, status, extra = {}) => {
    const request = taken(sid)
    const url = extra.url ?? request.params.StatusCallback
    if (!url) throw new Error(`SMS ${sid} was sent without a StatusCallback`)
    const params: Record<string, string> = {
      AccountSid: accountSid,
      ApiVersion: '2010-04-01',
      From: request.params.From ?? '',
      MessageSid: sid,
      MessageStatus: status,
      SmsSid: sid,
      SmsStatus: status,
      To: request.params.To ?? '',
      ...(status === 'undelivered' || status === 'failed' ? { ErrorCode: extra.errorCode ?? '30003' } : {}),
      ...(extra.price ? { Price: extra.price, PriceUnit: extra.priceUnit ?? 'USD' } : {}),
    }
    return {
      url,
      params,
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(extra.authToken ?? authToken, url, params),
      },
    }
  }

  return {
    url: `http://127.0.0.1:${port}`,
    accountSid,
    authToken,
    requests,
    sentTo: (phone) => requests.filter((r) => r.sid !== undefined && r.params.To === phone),
    script: (...answers) => void queue.push(...answers),
    pricing,
    reads: (sid) => reads.get(sid) ?? 0,
    statusCallback,
    async postStatus(sid, status, extra = {}) {
      const signed = statusCallback(sid, status, extra)
      return fetch(extra.target ?? signed.url, { method: 'POST', headers: signed.headers, body: signed.body })
    },
    env: (statusCallbackUrl) => ({
      SMS_PROVIDER: 'twilio',
      SMS_API_URL: `http://127.0.0.1:${port}`,
      SMS_ACCOUNT_SID: accountSid,
      SMS_AUTH_TOKEN: authToken,
      SMS_FROM: FAKE_SMS_FROM,
      ...(statusCallbackUrl ? { SMS_STATUS_CALLBACK_URL: statusCallbackUrl } : {}),
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const newSid = () => `SM${randomBytes(16).toString('hex')}`

/** The Message resource Twilio answers a create with (the fields a client reads). */
const messageResource = (accountSid: string, sid: string, params: Record<string, string>) => ({
  sid,
  account_sid: accountSid,
  api_version: '2010-04-01',
  body: params.Body,
  date_created: new Date().toUTCString(),
  direction: 'outbound-api',
  error_code: null,
  error_message: null,
  from: params.From ?? null,
  messaging_service_sid: params.MessagingServiceSid ?? null,
  num_segments: '1',
  status: params.MessagingServiceSid ? 'accepted' : 'queued',
  to: params.To,
  uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
})

async function writeAnswer(res: ServerResponse, answer: ScriptedAnswer) {
  if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
  if (!res.writable) return
  res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
  res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
}
