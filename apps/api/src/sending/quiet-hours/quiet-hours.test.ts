import { describe, expect, it } from 'vitest'
import { QuietHoursRule } from './quiet-hours.ts'
import { QuietHoursClock } from './quiet-hours-clock.ts'
import { RecipientZones } from './recipient-zones.ts'

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString())
const night = { start: '21:00', end: '08:00' }

describe('quiet hours in one zone', () => {
  const clock = new QuietHoursClock()
  const saoPaulo = ['America/Sao_Paulo'] // UTC-3 all year

  it('lets a message due before they start go at once', () => {
    expect(clock.releaseAt(night, saoPaulo, at('2026-11-25T23:59:00Z'))).toBeUndefined() // 20:59 local
  })

  it('holds one due inside them until they end the next morning, local time', () => {
    expect(iso(clock.releaseAt(night, saoPaulo, at('2026-11-26T00:00:00Z')))).toBe('2026-11-26T11:00:00.000Z')
    expect(iso(clock.releaseAt(night, saoPaulo, at('2026-11-26T10:59:59Z')))).toBe('2026-11-26T11:00:00.000Z')
    expect(clock.releaseAt(night, saoPaulo, at('2026-11-26T11:00:00Z'))).toBeUndefined()
  })

  it('takes a stretch that does not span midnight', () => {
    const lunch = { start: '12:00', end: '14:00' }
    expect(iso(clock.releaseAt(lunch, saoPaulo, at('2026-11-26T15:30:00Z')))).toBe('2026-11-26T17:00:00.000Z')
    expect(clock.releaseAt(lunch, saoPaulo, at('2026-11-26T17:30:00Z'))).toBeUndefined()
  })

  it('ends them at the local hour across a daylight-saving change', () => {
    // New York moves from UTC-5 to UTC-4 at 02:00 on 8 March 2026: 08:00 that morning is 12:00 UTC.
    expect(iso(clock.releaseAt(night, ['America/New_York'], at('2026-03-08T04:00:00Z')))).toBe(
      '2026-03-08T12:00:00.000Z',
    )
  })
})

describe('quiet hours in a country of several zones', () => {
  const clock = new QuietHoursClock()
  const zones = new RecipientZones()

  it('waits until they are over in every zone of the country', () => {
    const us = zones.ofPhone('+12125550123') ?? []
    expect(us).toContain('America/New_York')
    expect(us).toContain('Pacific/Honolulu')
    // 22:00 in New York: quiet there. 08:00 in Honolulu (UTC-10) is 18:00 UTC, 13:00 in New York.
    expect(iso(clock.releaseAt(night, us, at('2026-11-26T03:00:00Z')))).toBe('2026-11-26T18:00:00.000Z')
    // 19:00 in New York, 14:00 in Honolulu: no one is in quiet hours.
    expect(clock.releaseAt(night, us, at('2026-11-26T00:00:00Z'))).toBeUndefined()
  })

  it('goes when they first end somewhere when the zones never agree', () => {
    const russia = zones.ofPhone('+79161234567') ?? []
    expect(russia.length).toBeGreaterThan(5)
    // 20:00 to 10:00 across UTC+2 … UTC+12 leaves no moment quiet nowhere: the first end is taken.
    const long = { start: '20:00', end: '10:00' }
    const released = clock.releaseAt(long, russia, at('2026-11-26T00:00:00Z'))
    expect(released).toBeGreaterThan(at('2026-11-26T00:00:00Z'))
    expect(released).toBeLessThanOrEqual(at('2026-11-27T00:00:00Z'))
  })
})

describe('the recipient zone', () => {
  const rule = new QuietHoursRule()
  const quiet = { start: '21:00', end: '08:00' }
  const due = at('2026-11-26T23:30:00Z') // 23:30 in London, 20:30 in São Paulo, 13:30 in Honolulu

  it("comes from the phone number's country", () => {
    expect(iso(rule.holdUntil({ phone: '+447400123456' }, quiet, undefined, due))).toBe(
      '2026-11-27T08:00:00.000Z',
    )
  })

  it("is the send's timeZone when it names one", () => {
    expect(rule.holdUntil({ phone: '+447400123456' }, quiet, 'Pacific/Honolulu', due)).toBeUndefined()
  })

  it("falls back to the quiet hours' own zone, then UTC, for a recipient without a known country", () => {
    expect(rule.holdUntil({}, { ...quiet, timeZone: 'America/Sao_Paulo' }, undefined, due)).toBeUndefined()
    expect(iso(rule.holdUntil({}, quiet, undefined, due))).toBe('2026-11-27T08:00:00.000Z')
    expect(iso(rule.holdUntil({ phone: '+999123456' }, quiet, undefined, due))).toBe(
      '2026-11-27T08:00:00.000Z',
    )
  })
})
