import { describe, expect, it } from 'vitest'
import { ownerOnlyScope, scopeForOwner } from './consent-copy.ts'

describe('the copy of the suppression list, read for an owner', () => {
  const value = 'marketing|tenant:acme=all|key:5f1e=marketing'

  it('gives the recipient’s own scope and the owner’s, the wider', () => {
    expect(scopeForOwner(value, 'tenant:acme')).toBe('all')
    expect(scopeForOwner(value, 'tenant:globex')).toBe('marketing')
    expect(scopeForOwner('all', 'tenant:acme')).toBe('all')
  })

  it('gives only the owner’s, not the recipient’s own, where only that counts', () => {
    expect(ownerOnlyScope(value, 'tenant:acme')).toBe('all')
    expect(ownerOnlyScope(value, 'key:5f1e')).toBe('marketing')
    expect(ownerOnlyScope(value, 'tenant:globex')).toBeNull()
    expect(ownerOnlyScope('all', 'tenant:acme')).toBeNull()
    expect(ownerOnlyScope(null, 'tenant:acme')).toBeNull()
    // A tenant whose id starts another's is not that one.
    expect(ownerOnlyScope('|tenant:acme2=all', 'tenant:acme')).toBeNull()
  })
})
