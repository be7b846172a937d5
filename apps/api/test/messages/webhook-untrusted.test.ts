import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { signWebhook, statusWebhook } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'

// Platform input is untrusted even when correctly signed: these deliveries are all signed.
const APP_SECRET = 'whatsapp-app-secret-for-tests'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const now = () => Math.floor(Date.now() / 1000)
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

describe('WhatsApp webhook: the signature header, parsed strictly', () => {
  const signed = () => {
    const body = JSON.stringify(statusWebhook({ id: 'wamid.sig', status: 'read', timestamp: String(now()) }))
    return { body, signature: signWebhook(body, APP_SECRET) }
  }
  const forged = `sha256=${'0'.repeat(64)}`

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
    await app.listen({ port: 0, host: '127.0.0.1' })
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
