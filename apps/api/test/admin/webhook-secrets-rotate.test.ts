import { randomBytes } from 'node:crypto'
import type { WebhookEndpointWithSecret } from '@dispatch/contracts'
import { createSecretBox } from '@dispatch/runtime'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  runSecretsRotate,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const OLD_KEY = randomBytes(32).toString('base64')
const NEW_KEY = randomBytes(32).toString('base64')
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

let world: TestWorld
let app: TestApp
/** Each endpoint's signing secrets in clear, as stored: `secret` and `previous_secret`. */
const expected = new Map<string, { secret: string; previous: string | null }>()
beforeAll(async () => {
  world = await createWorld()
  // The endpoints are registered while OLD_KEY is the key.
  app = await buildTestApp(world, { SECRETS_KEY: OLD_KEY })
  const key = await activeKey(app, { scopes: ['manage:webhooks'] })
  const call = async (url: string, payload?: object) => {
    const res = await app.inject({
      method: 'POST',
      url: `/api/third-party/webhook-endpoints${url}`,
      headers: { 'x-api-key': key.key },
      ...(payload ? { payload } : {}),
    })
    expect(res.statusCode, res.body).toBeLessThan(300)
    return res.json<WebhookEndpointWithSecret>()
  }
  const register = () => call('', { url: 'http://127.0.0.1:9999/hook', events: ['message.sent'] })

  // Rotated: both columns sealed under OLD_KEY.
  const rotated = await register()
  const { secret } = await call(`/${rotated.id}/rotate-secret`)
  expected.set(rotated.id, { secret, previous: rotated.secret })
  // Never rotated: one sealed value.
  const plain = await register()
  expected.set(plain.id, { secret: plain.secret, previous: null })
  // Written before secrets were sealed: both columns clear.
  const legacy = await register()
  const clear = { secret: newSecret(), previous: newSecret() }
  await world.sql`
    update webhook_endpoints
    set secret = ${clear.secret}, previous_secret = ${clear.previous},
      previous_secret_expires_at = now() + interval '1 hour'
    where id = ${legacy.id}`
  expected.set(legacy.id, clear)
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const rotate = (env: Record<string, string>) => runSecretsRotate(world, env)

const stored = async () =>
  new Map(
    (await world.sql`select id, secret, previous_secret from webhook_endpoints`).map((r) => [
      r.id as string,
      { secret: r.secret as string, previous: r.previous_secret as string | null },
    ]),
  )

it('seals every signing secret under the new key, the ones stored clear included, once', async () => {
  const first = await rotate({ SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: OLD_KEY })
  expect(first.code, first.stderr).toBe(0)
  expect(first.stdout).toContain(
    '5 of 5 webhook signing secrets re-sealed under the current SECRETS_KEY (2 of them stored clear until now)',
  )
  expect(first.stdout).toContain('0 of 0 sender tokens re-sealed')
  expect(`${first.stdout}${first.stderr}`).not.toContain('whsec_')

  // The old key is no longer needed.
  const newOnly = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: NEW_KEY })
  const rows = await stored()
  expect(rows.size).toBe(3)
  for (const [id, { secret, previous }] of rows) {
    expect(newOnly.isStale(secret)).toBe(false)
    expect(newOnly.open(secret)).toBe(expected.get(id)?.secret)
    if (expected.get(id)?.previous === null) {
      expect(previous).toBeNull()
    } else {
      expect(newOnly.isStale(previous ?? '')).toBe(false)
      expect(newOnly.open(previous ?? '')).toBe(expected.get(id)?.previous)
    }
  }

  const again = await rotate({ SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: OLD_KEY })
  expect(again.code, again.stderr).toBe(0)
  expect(again.stdout).toContain('0 of 5 webhook signing secrets re-sealed')
  expect(await stored()).toEqual(rows)
})

it('names the endpoints whose secrets no configured key opens, changes nothing of theirs, and exits 1', async () => {
  const before = await stored()
  const res = await rotate({ SECRETS_KEY: OLD_KEY })
  expect(res.code).toBe(1)
  expect(res.stdout).toContain('0 of 5 webhook signing secrets re-sealed')
  expect(res.stderr).toContain('Webhook signing secrets of 3 endpoints are sealed under a key')
  for (const id of expected.keys()) expect(res.stderr).toContain(id)
  expect(await stored()).toEqual(before)
})
