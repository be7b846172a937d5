import { describe, expect, it } from 'vitest'
import { acceptedAtOfMessageId, messageIdAt } from './message-ids.ts'

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('message ids', () => {
  it('are UUIDv7 carrying their acceptance time to the millisecond, from 1970 to 10889', () => {
    for (const ms of [0, 1, Date.UTC(2026, 10, 28, 10, 57, 3, 123), 2 ** 48 - 1]) {
      const id = messageIdAt(ms)
      expect(id).toMatch(V7)
      expect(acceptedAtOfMessageId(id)).toBe(ms)
    }
  })

  it('sort by their time, and never repeat within one millisecond', () => {
    const at = Date.now()
    const ids = Array.from({ length: 10_000 }, () => messageIdAt(at))
    expect(new Set(ids).size).toBe(ids.length)
    const later = messageIdAt(at + 1)
    expect(ids.every((id) => id < later)).toBe(true)
  })
})
