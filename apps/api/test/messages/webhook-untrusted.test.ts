import { createHmac } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { signWebhook, statusWebhook } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  recordSentMessage,
  SEND_SCOPES,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

// Platform input is untrusted even when correctly signed: these deliveries are all signed.
const APP_SECRET = 'whatsapp-app-secret-for-tests'

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  key = await activeKey(app, { scopes: SEND_SCOPES })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const now = () => Math.floor(Date.now() / 1000)
const sentMessage = (platformMessageId: string) => recordSentMessage(app, world, key, platformMessageId)
const row = async (id: string) => {
  const [found] = await world.sql`
    select status, delivered_at, read_at, last_error_code, last_error_message from messages where id = ${id}`
  return found
}
const post = (body: string | Buffer, signature: string | string[] | undefined) =>
  app.inject({
    method: 'POST',
    url: '/api/webhooks/whatsapp',
    headers: {
      'content-type': 'application/json',
      ...(signature === undefined ? {} : { 'x-hub-signature-256': signature }),
    },
    payload: body,
  })
/** The exact bytes, signed: what Meta would send. */
const deliver = (...statuses: unknown[]) => {
  const body = JSON.stringify(statusWebhook(...(statuses as Array<Record<string, unknown>>)))
  return post(body, signWebhook(body, APP_SECRET))
}

describe('WhatsApp webhook: out-of-range and malformed items', () => {
  it('skips a status whose timestamp is not a sane time, applies the good one beside it, answers 200', async () => {
    const far = await sentMessage('wamid.window-far')
    const old = await sentMessage('wamid.window-old')
    const ahead = await sentMessage('wamid.window-ahead')
    const good = await sentMessage('wamid.window-good')
    const res = await deliver(
      { id: 'wamid.window-far', status: 'read', timestamp: '999999999999', recipient_id: '5511987654321' },
      { id: 'wamid.window-old', status: 'read', timestamp: String(now() - 31 * 86_400) },
      { id: 'wamid.window-ahead', status: 'read', timestamp: String(now() + 2 * 3600) },
      { id: 'wamid.window-good', status: 'delivered', timestamp: String(now()) },
    )
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ received: true })
    for (const id of [far, old, ahead]) expect(await row(id)).toMatchObject({ status: 'sent', read_at: null })
    expect((await row(good))?.status).toBe('delivered')

    // One warning names where and why, never a message id or a phone number.
    const warning = app.logs.lines.find((line) => line.includes('whatsapp webhook items skipped'))
    expect(warning).toBeDefined()
    const logged = JSON.parse(warning as string)
    expect(logged.level).toBe(40)
    expect(logged.skipped).toBe(3)
    expect(logged.items[0]).toEqual({
      at: 'entry[0].changes[0].statuses[0]',
      reason: expect.stringMatching(/timestamp.*outside/),
    })
    expect(warning).not.toContain('wamid.')
    expect(app.logs.text()).not.toContain('5511987654321')
  })

  it('a time just inside the window (59 minutes ahead, 29 days back) applies', async () => {
    const ahead = await sentMessage('wamid.window-edge-ahead')
    const back = await sentMessage('wamid.window-edge-back')
    const res = await deliver(
      { id: 'wamid.window-edge-ahead', status: 'delivered', timestamp: String(now() + 59 * 60) },
      { id: 'wamid.window-edge-back', status: 'delivered', timestamp: String(now() - 29 * 86_400) },
    )
    expect(res.statusCode).toBe(200)
    expect((await row(ahead))?.status).toBe('delivered')
    expect((await row(back))?.status).toBe('delivered')
  })

  it('skips items of the wrong type, without an id or with an unknown status; the good ones still apply', async () => {
    const bad = await sentMessage('wamid.bad-items')
    const good = await sentMessage('wamid.good-item')
    const ts = String(now())
    const res = await deliver(
      { id: 42, status: 'read', timestamp: ts },
      { status: 'read', timestamp: ts },
      { id: '', status: 'read', timestamp: ts },
      { id: 'wamid.bad-items', status: 'deleted', timestamp: ts },
      { id: 'wamid.bad-items', status: 'read', timestamp: Number(ts) },
      { id: 'wamid.bad-items', status: 'read', timestamp: '-1' },
      { id: 'wamid.bad-items', status: 'failed', timestamp: ts, errors: [{ code: 'oops' }] },
      { id: 'wamid.bad-items', status: 'failed', timestamp: ts, errors: 'none' },
      null,
      'wamid.bad-items',
      [],
      { id: 'wamid.good-item', status: 'read', timestamp: ts },
    )
    expect(res.statusCode, res.body).toBe(200)
    expect((await row(bad))?.status).toBe('sent')
    expect((await row(good))?.status).toBe('read')
    const warning = app.logs.lines.findLast((line) => line.includes('whatsapp webhook items skipped'))
    expect(JSON.parse(warning as string).skipped).toBe(11)
  })

  it('keeps its 4xx for a body that is not JSON, or not a webhook envelope', async () => {
    const notJson = '{"object":'
    expectError(await post(notJson, signWebhook(notJson, APP_SECRET)), 400, 'VALIDATION_ERROR')
    const noEntry = JSON.stringify({ object: 'whatsapp_business_account' })
    expectError(await post(noEntry, signWebhook(noEntry, APP_SECRET)), 400, 'VALIDATION_ERROR', /entry/)
    const statusesNotArray = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ changes: [{ field: 'messages', value: { statuses: 'x' } }] }],
    })
    expectError(
      await post(statusesNotArray, signWebhook(statusesNotArray, APP_SECRET)),
      400,
      'VALIDATION_ERROR',
    )
  })

  it('a signed body nested deeper than the call stack allows is handled, never a 500', async () => {
    const deep = `{"object":"x","entry":[],"deep":${'['.repeat(200_000)}${']'.repeat(200_000)}}`
    expect((await post(deep, signWebhook(deep, APP_SECRET))).statusCode).toBe(200)
    const deepItem = JSON.stringify(
      statusWebhook({ id: 'wamid.deep', status: 'read', timestamp: String(now()) }),
    ).replace('"statuses":[', `"statuses":[${'['.repeat(200_000)}${']'.repeat(200_000)},`)
    expect((await post(deepItem, signWebhook(deepItem, APP_SECRET))).statusCode).toBe(200)
  })
})

describe('WhatsApp webhook: NUL and lone surrogates from the platform', () => {
  it('stores an error message and title with U+FFFD in place of NUL and lone surrogates', async () => {
    const withMessage = await sentMessage('wamid.nul-message')
    const withTitle = await sentMessage('wamid.nul-title')
    const ts = String(now())
    const res = await deliver(
      {
        id: 'wamid.nul-message',
        status: 'failed',
        timestamp: ts,
        errors: [
          { code: 131026, title: 'x\u0000', message: 'bad\u0000byte \ud800 high \udfff low \ud83d\ude00 ok' },
        ],
      },
      {
        id: 'wamid.nul-title',
        status: 'failed',
        timestamp: ts,
        errors: [{ code: 131049, title: '\udfff\u0000\ud800' }],
      },
    )
    expect(res.statusCode, res.body).toBe(200)
    expect(await row(withMessage)).toMatchObject({
      status: 'failed',
      last_error_code: '131026',
      last_error_message: 'bad\uFFFDbyte \uFFFD high \uFFFD low \ud83d\ude00 ok',
    })
    expect(await row(withTitle)).toMatchObject({ status: 'failed', last_error_message: '\uFFFD\uFFFD\uFFFD' })
  })

  it('an id with NUL or a lone surrogate is looked up as its U+FFFD form: 200, never a 500', async () => {
    const nul = await sentMessage('wamid.id-\uFFFD-nul')
    const ts = String(now())
    const res = await deliver(
      { id: 'wamid.id-\u0000-nul', status: 'delivered', timestamp: ts },
      { id: 'wamid.id-\ud800', status: 'delivered', timestamp: ts },
      { id: '\udfff', status: 'read', timestamp: ts },
      { id: '\u0000', status: 'failed', timestamp: ts, errors: [{ code: 1, message: '\u0000' }] },
    )
    expect(res.statusCode, res.body).toBe(200)
    expect((await row(nul))?.status).toBe('delivered')
  })

  it('NUL and lone surrogates anywhere else (other fields, keys, the envelope) are harmless too', async () => {
    const id = await sentMessage('wamid.nul-elsewhere')
    const payload = statusWebhook({
      id: 'wamid.nul-elsewhere',
      status: 'read',
      timestamp: String(now()),
      recipient_id: '\u0000\ud800',
      biz_opaque_callback_data: '\udfff',
      'key\u0000\ud800': { nested: ['\u0000'] },
    })
    const body = JSON.stringify({ ...payload, object: 'whatsapp\u0000\ud800' })
    // JSON.stringify escapes them: these are the bytes `\u0000`, `\ud800` on the wire.
    expect(body).toContain('\\u0000')
    expect(body).toContain('\\ud800')
    const res = await post(body, signWebhook(body, APP_SECRET))
    expect(res.statusCode, res.body).toBe(200)
    expect((await row(id))?.status).toBe('read')
  })

  it('bytes that are not UTF-8 become U+FFFD too', async () => {
    const id = await sentMessage('wamid.bad-utf8')
    const text = JSON.stringify(
      statusWebhook({
        id: 'wamid.bad-utf8',
        status: 'failed',
        timestamp: String(now()),
        errors: [{ code: 1, message: 'AB' }],
      }),
    )
    const bytes = Buffer.from(text.replace('"AB"', '"A\u0001B"'))
    bytes[bytes.indexOf(1)] = 0xff
    const res = await post(bytes, `sha256=${createHmac('sha256', APP_SECRET).update(bytes).digest('hex')}`)
    expect(res.statusCode, res.body).toBe(200)
    expect((await row(id))?.last_error_message).toBe('A\uFFFDB')
  })
})

describe('WhatsApp webhook: the signature header, parsed strictly', () => {
  const signed = () => {
    const body = JSON.stringify(statusWebhook({ id: 'wamid.sig', status: 'read', timestamp: String(now()) }))
    return { body, signature: signWebhook(body, APP_SECRET) }
  }
  const forged = `sha256=${'0'.repeat(64)}`

  it('is checked over the raw bytes before any JSON parsing: an unsigned 1 MiB body that is not JSON is 401, never 400', async () => {
    // Had the body been parsed first, this would be the parser's 400 ("not valid JSON"): the
    // signature's 401 shows no parse was spent on it, however large.
    const notJson = `{"object":"whatsapp_business_account","entry":[${'x'.repeat(1024 * 1024 - 64)}`
    for (const signature of [undefined, forged, signWebhook(`${notJson} `, APP_SECRET)]) {
      expectError(await post(notJson, signature), 401, 'WEBHOOK_SIGNATURE_INVALID', /X-Hub-Signature-256/)
    }
    // The same bytes, rightly signed, reach the parser, which refuses them for what they are.
    expectError(
      await post(notJson, signWebhook(notJson, APP_SECRET)),
      400,
      'VALIDATION_ERROR',
      /not valid JSON/,
    )
  })

  it('a request with no well-formed signature is refused before its body is read', async () => {
    if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    // Headers announcing 1 MiB, and not one byte of it sent: the answer comes all the same.
    const answer = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/webhooks/whatsapp',
            headers: {
              'content-type': 'application/json',
              'content-length': String(1024 * 1024),
              ...headers,
            },
          },
          (res) => {
            const chunks: Buffer[] = []
            res.on('data', (chunk: Buffer) => chunks.push(chunk))
            res.on('end', () => {
              req.destroy()
              resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() })
            })
          },
        )
        req.on('error', reject)
        req.flushHeaders()
        setTimeout(() => {
          req.destroy()
          reject(new Error('no answer within 3 s: the server waited for the body'))
        }, 3000)
      })
    const cases: Array<Record<string, string>> = [{}, { 'x-hub-signature-256': 'sha256=abc' }]
    for (const headers of cases) {
      const res = await answer(headers)
      expect(res.status).toBe(401)
      expect(JSON.parse(res.body)).toMatchObject({ errorCode: 'WEBHOOK_SIGNATURE_INVALID', statusCode: 401 })
    }
  })

  it('the one valid header: 200', async () => {
    const { body, signature } = signed()
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect((await post(body, signature)).statusCode).toBe(200)
    // Hex digits in either case are the same bytes.
    expect((await post(body, `sha256=${signature.slice(7).toUpperCase()}`)).statusCode).toBe(200)
  })

  it('401 for anything after the 64 hex characters', async () => {
    const { body, signature } = signed()
    for (const trailing of ['0', '00', 'z', ', sha256=00', `, ${forged}`, ';', '\t0']) {
      expectError(await post(body, signature + trailing), 401, 'WEBHOOK_SIGNATURE_INVALID')
    }
  })

  it('401 for 63 or 65 hex characters, a prefix in another case, or none', async () => {
    const { body, signature } = signed()
    const hex = signature.slice(7)
    for (const header of [
      `sha256=${hex.slice(0, 63)}`,
      `sha256=${hex}0`,
      `SHA256=${hex}`,
      `Sha256=${hex}`,
      `sha1=${hex}`,
      ` sha256=${hex}`,
      hex,
      '',
    ]) {
      expectError(await post(body, header), 401, 'WEBHOOK_SIGNATURE_INVALID')
    }
    expectError(await post(body, undefined), 401, 'WEBHOOK_SIGNATURE_INVALID')
  })

  it('401 when the header comes twice, whichever of the two is valid', async () => {
    const { body, signature } = signed()
    for (const headers of [
      [signature, forged],
      [forged, signature],
      [signature, signature],
    ]) {
      expectError(await post(body, headers), 401, 'WEBHOOK_SIGNATURE_INVALID')
    }
  })

  it('401 for a repeated header on a real socket, too (Node joins the values with ", ")', async () => {
    const { body, signature } = signed()
    if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const postRaw = (header: string | string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/webhooks/whatsapp',
            headers: { 'content-type': 'application/json', 'x-hub-signature-256': header },
          },
          (res) => {
            const chunks: Buffer[] = []
            res.on('data', (chunk: Buffer) => chunks.push(chunk))
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
            )
          },
        )
        req.on('error', reject)
        req.end(body)
      })
    expect((await postRaw(signature)).status).toBe(200)
    for (const headers of [
      [signature, forged],
      [forged, signature],
    ]) {
      const res = await postRaw(headers)
      expect(res.status).toBe(401)
      expect(JSON.parse(res.body)).toEqual({
        message: expect.any(String),
        errorCode: 'WEBHOOK_SIGNATURE_INVALID',
        statusCode: 401,
        error: 'Unauthorized',
      })
    }
  })
})
