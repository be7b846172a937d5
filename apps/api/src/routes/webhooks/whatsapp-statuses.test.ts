import { statusWebhook } from '@dispatch/testing'
import { describe, expect, it } from 'vitest'
import { readStatusUpdates, STATUS_TIME_AHEAD_MS, STATUS_TIME_BACK_MS } from './whatsapp-statuses.ts'

const now = new Date('2025-06-01T12:00:00Z')
const at = (offsetMs: number) => String((now.getTime() + offsetMs) / 1000)
const read = (...statuses: Array<Record<string, unknown>>) =>
  readStatusUpdates(statusWebhook(...statuses), now)

describe('readStatusUpdates', () => {
  it('takes times inside the window, edges included, and skips those outside', () => {
    const { updates, skipped } = read(
      { id: 'a', status: 'read', timestamp: at(STATUS_TIME_AHEAD_MS) },
      { id: 'b', status: 'read', timestamp: at(-STATUS_TIME_BACK_MS) },
      { id: 'c', status: 'read', timestamp: at(STATUS_TIME_AHEAD_MS + 1000) },
      { id: 'd', status: 'read', timestamp: at(-STATUS_TIME_BACK_MS - 1000) },
      { id: 'e', status: 'read', timestamp: '999999999999' },
    )
    expect(updates.map((u) => u.platformMessageId)).toEqual(['a', 'b'])
    expect(updates[0]?.at).toEqual(new Date(now.getTime() + STATUS_TIME_AHEAD_MS))
    expect(skipped.map((s) => s.at)).toEqual([2, 3, 4].map((i) => `entry[0].changes[0].statuses[${i}]`))
  })

  it('says why an item was skipped, by path, without its values', () => {
    const { skipped } = read({ id: 'wamid.secret', status: 'deleted', timestamp: at(0) }, { status: 'read' })
    expect(skipped[0]?.reason).toMatch(/^\/status /)
    expect(skipped[1]?.reason).toMatch(/id|required/)
    expect(JSON.stringify(skipped)).not.toContain('wamid.secret')
  })

  it('reads who the status names, phone and BSUID, each only when well formed', () => {
    const { updates, skipped } = read(
      { id: 'a', status: 'delivered', timestamp: at(0), recipient_id: '5511987654321' },
      { id: 'b', status: 'delivered', timestamp: at(0), recipient_user_id: 'BR.1502576394655843' },
      {
        id: 'c',
        status: 'read',
        timestamp: at(0),
        recipient_id: '5511987654321',
        recipient_user_id: 'US.ENT.11815799212886844830',
      },
      { id: 'd', status: 'read', timestamp: at(0), recipient_id: '+55 11', recipient_user_id: 'nope' },
    )
    expect(skipped).toEqual([])
    expect(updates.map((u) => u.recipient)).toEqual([
      { phone: '+5511987654321', userId: null },
      { phone: null, userId: 'BR.1502576394655843' },
      { phone: '+5511987654321', userId: 'US.ENT.11815799212886844830' },
      undefined,
    ])
  })

  it("records the first error's message, else its title", () => {
    const { updates } = read(
      { id: 'a', status: 'failed', timestamp: at(0), errors: [{ code: 131026, title: 'T', message: 'M' }] },
      { id: 'b', status: 'failed', timestamp: at(0), errors: [{ code: 131049, title: 'T' }] },
    )
    expect(updates.map((u) => u.error)).toEqual([
      { code: '131026', message: 'M' },
      { code: '131049', message: 'T' },
    ])
  })
})
