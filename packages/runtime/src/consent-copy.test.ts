import { describe, expect, it } from 'vitest'
import { scopeForOwner } from './consent-copy.ts'

describe('the copy of the suppression list, read for an owner', () => {
  const value = 'marketing|tenant:acme=all|key:5f1e=marketing'

  it('gives the recipient’s own scope and the owner’s, the wider', () => {
    expect(scopeForOwner(value, 'tenant:acme')).toBe('all')
    expect(scopeForOwner(value, 'tenant:globex')).toBe('marketing')
    expect(scopeForOwner('all', 'tenant:acme')).toBe('all')
  })
})
