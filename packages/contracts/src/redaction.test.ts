import { describe, expect, it } from 'vitest'
import { contentRetentionOf, retentionHours } from './redaction.ts'

describe('content retention as stored', () => {
  it('is hours: null retain, 0 discard, N hours, and back', () => {
    for (const value of ['retain', 'discard', 1, 8760] as const) {
      expect(contentRetentionOf(retentionHours(value))).toBe(value)
    }
    expect([retentionHours('retain'), retentionHours('discard'), retentionHours(24)]).toEqual([null, 0, 24])
  })
})
