import { describe, expect, it } from 'vitest'
import { decodeSticky, encodeSticky, stickyAging, stickyLifeMs } from './pool-sticky.ts'

const DAY = 86_400_000
const SENDER = '0b7c4d36-5a7e-4c4e-9d0e-2f1a3b4c5d6e'

describe("a pool's sticky record", () => {
  it('reads back what was written: number, window, write time', () => {
    const record = { senderId: SENDER, inboundAt: 1_765_000_000_000, writtenAt: 1_765_000_100_000 }
    expect(decodeSticky(encodeSticky(record))).toEqual(record)
    expect(decodeSticky(encodeSticky({ senderId: 'default', inboundAt: 0, writtenAt: 5 }))).toEqual({
      senderId: 'default',
      inboundAt: 0,
      writtenAt: 5,
    })
  })

  it('reads a record of the older layout (no write time) as written long ago', () => {
    const old = decodeSticky(`${SENDER} 1765000000000`)
    expect(old).toEqual({ senderId: SENDER, inboundAt: 1_765_000_000_000, writtenAt: 0 })
    expect(stickyAging(old as NonNullable<typeof old>, 30 * DAY, Date.now())).toBe(true)
  })

  it('is none when empty or unreadable', () => {
    for (const value of [null, undefined, '', SENDER, ` ${SENDER}`])
      expect(decodeSticky(value)).toBeUndefined()
    expect(decodeSticky(`${SENDER} x y`)).toEqual({ senderId: SENDER, inboundAt: 0, writtenAt: 0 })
  })

  it('lives twice the configured time, and is written again by a send once it is that old, not before', () => {
    const now = 1_765_000_000_000
    const at = (ageDays: number) => ({ senderId: SENDER, inboundAt: 0, writtenAt: now - ageDays * DAY })
    expect(stickyLifeMs(30 * DAY)).toBe(60 * DAY)
    expect(stickyAging(at(0), 30 * DAY, now)).toBe(false)
    expect(stickyAging(at(29.9), 30 * DAY, now)).toBe(false)
    expect(stickyAging(at(30), 30 * DAY, now)).toBe(true)
    expect(stickyAging(at(59), 30 * DAY, now)).toBe(true)
  })
})
