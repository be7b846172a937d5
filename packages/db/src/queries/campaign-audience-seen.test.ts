import { describe, expect, it } from 'vitest'
import { SeenRecipients } from './campaign-audience-seen.ts'

describe('SeenRecipients', () => {
  it('finds every repeated phone with its first line, past the table growing many times', () => {
    const seen = new SeenRecipients()
    const phone = (i: number) => `+55119${String(i).padStart(8, '0')}`
    for (let i = 0; i < 300_000; i++) expect(seen.phone(phone(i), i + 2)).toBeUndefined()
    for (let i = 0; i < 300_000; i += 997) expect(seen.phone(phone(i), 400_000)).toBe(i + 2)
  })

  it('tells apart phones of the same digits but for the last, and the longest E.164 ones', () => {
    const seen = new SeenRecipients()
    expect(seen.phone('+999999999999999', 2)).toBeUndefined()
    expect(seen.phone('+999999999999998', 3)).toBeUndefined()
    expect(seen.phone('+12345678', 4)).toBeUndefined()
    expect(seen.phone('+999999999999999', 5)).toBe(2)
    expect(seen.phone('+12345678', 6)).toBe(4)
  })

  it('keeps user ids apart from phones', () => {
    const seen = new SeenRecipients()
    expect(seen.userId('US.13491208655302741918', 2)).toBeUndefined()
    expect(seen.phone('+13491208655', 3)).toBeUndefined()
    expect(seen.userId('US.13491208655302741918', 4)).toBe(2)
  })
})
