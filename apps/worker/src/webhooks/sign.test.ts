import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { signWebhook } from './sign.ts'

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

describe('signWebhook', () => {
  const oldSecret = newSecret()
  const newerSecret = newSecret()
  const body = JSON.stringify({ type: 'message.delivered', data: { id: 'm_1', text: 'héllo ✓' } })
  const headers = signWebhook({ id: 'msg_1', timestamp: new Date(), body, secrets: [oldSecret, newerSecret] })

  it('signs once per secret, so a receiver holding either secret of a rotation accepts it', () => {
    expect(headers['webhook-id']).toBe('msg_1')
    expect(headers['webhook-timestamp']).toMatch(/^\d+$/)
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2)
    for (const secret of [oldSecret, newerSecret]) {
      expect(() => new Webhook(secret).verify(body, { ...headers })).not.toThrow()
    }
  })

  it('is refused for a tampered body, another secret or another id', () => {
    expect(() => new Webhook(oldSecret).verify(body.replace('m_1', 'm_2'), { ...headers })).toThrow()
    expect(() => new Webhook(newSecret()).verify(body, { ...headers })).toThrow()
    expect(() => new Webhook(oldSecret).verify(body, { ...headers, 'webhook-id': 'msg_2' })).toThrow()
  })

  it('takes Unix seconds as well as a Date, and signs the same thing for both', () => {
    const at = new Date('2026-01-02T03:04:05.678Z')
    const fromDate = signWebhook({ id: 'msg_1', timestamp: at, body, secrets: [oldSecret] })
    const fromSeconds = signWebhook({ id: 'msg_1', timestamp: 1767323045, body, secrets: [oldSecret] })
    expect(fromDate).toEqual(fromSeconds)
    expect(fromDate['webhook-timestamp']).toBe('1767323045')
  })

  it('matches the library’s own signature', () => {
    const at = new Date('2026-01-02T03:04:05Z')
    const ours = signWebhook({ id: 'msg_1', timestamp: at, body, secrets: [oldSecret] })
    expect(ours['webhook-signature']).toBe(new Webhook(oldSecret).sign('msg_1', at, body))
  })

  it('refuses to sign without a secret, or with a malformed one, without quoting it', () => {
    expect(() => signWebhook({ id: 'a', timestamp: 1, body, secrets: [] })).toThrow(/at least one secret/)
    expect(() => signWebhook({ id: 'a', timestamp: 1, body, secrets: [oldSecret, 'hunter2!'] })).toThrow(
      /^webhook secret #2 is not "whsec_" followed by base64$/,
    )
    expect(() => signWebhook({ id: 'a', timestamp: 1.5, body, secrets: [oldSecret] })).toThrow(/whole Unix/)
  })
})
