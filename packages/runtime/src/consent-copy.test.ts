import { describe, expect, it } from 'vitest'
import { listsNumber, scopeForOwner } from './consent-copy.ts'

describe('the copy of the suppression list, read for an owner', () => {
  const value = 'marketing|tenant:acme=all|key:5f1e=marketing'

  it('gives the recipient’s own scope and the owner’s, the wider', () => {
    expect(scopeForOwner(value, 'tenant:acme')).toBe('all')
    expect(scopeForOwner(value, 'tenant:globex')).toBe('marketing')
    expect(scopeForOwner('all', 'tenant:acme')).toBe('all')
  })
})

describe("a recipient's list of numbers with entries", () => {
  it('lists a number only as a whole, never as the end of another', () => {
    const list = '306540352240011 115 '
    expect(listsNumber(list, '306540352240011')).toBe(true)
    expect(listsNumber(list, '115')).toBe(true)
    expect(listsNumber(list, '15')).toBe(false)
    expect(listsNumber(list, '30654035224001')).toBe(false)
    expect(listsNumber('1115 15 ', '15')).toBe(true)
    expect(listsNumber(null, '115')).toBe(false)
  })
})
