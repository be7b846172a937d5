import { randomBytes } from 'node:crypto'
import { createSecretBox } from '@dispatch/runtime'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  runSecretsRotate,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const OLD_KEY = randomBytes(32).toString('base64')
const NEW_KEY = randomBytes(32).toString('base64')

let world: TestWorld
let app: TestApp
const tokens = new Map<string, string>()
beforeAll(async () => {
  world = await createWorld()
  // The senders are added while OLD_KEY is the key.
  app = await buildTestApp(world, { SECRETS_KEY: OLD_KEY })
  for (const n of [1, 2]) {
    const accessToken = `EAAG-token-number-${n}-${randomBytes(8).toString('hex')}`
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: { phoneNumberId: `20000000${n}`, displayName: `Sender ${n}`, accessToken },
    })
    expect(res.statusCode, res.body).toBe(201)
    tokens.set(res.json().id, accessToken)
  }
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const rotate = (env: Record<string, string>) => runSecretsRotate(world, env)

const stored = async () =>
  new Map(
    (await world.sql`select id, access_token_ciphertext as sealed from senders`).map((r) => [
      r.id as string,
      r.sealed as string,
    ]),
  )

it('re-seals every token under the new key, once, and the old key is no longer needed', async () => {
  const first = await rotate({ SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: OLD_KEY })
  expect(first.code, first.stderr).toBe(0)
  expect(first.stdout).toContain('2 of 2 sender tokens re-sealed')

  const newOnly = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: NEW_KEY })
  for (const [id, sealed] of await stored()) {
    expect(newOnly.isStale(sealed)).toBe(false)
    expect(newOnly.open(sealed)).toBe(tokens.get(id))
  }

  const again = await rotate({ SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: OLD_KEY })
  expect(again.stdout).toContain('0 of 2 sender tokens re-sealed')
  expect(`${first.stdout}${first.stderr}`).not.toMatch(/EAAG-token/)
})

it('names the senders whose token no configured key opens, changes nothing of theirs, and exits 1', async () => {
  const before = await stored()
  const res = await rotate({ SECRETS_KEY: OLD_KEY })
  expect(res.code).toBe(1)
  expect(res.stdout).toContain('0 of 2 sender tokens re-sealed')
  for (const id of tokens.keys()) expect(res.stderr).toContain(id)
  expect(await stored()).toEqual(before)
})

it('refuses to run in production without SECRETS_KEY, naming it', async () => {
  const res = await rotate({ APP_ENV: 'production' })
  expect(res.code).toBe(1)
  expect(res.stderr).toContain('SECRETS_KEY: required in production')
})
