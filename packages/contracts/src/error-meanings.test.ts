import { describe, expect, it } from 'vitest'
import { ERROR_MEANINGS, errorTitle } from './error-meanings.ts'

describe('errorTitle', () => {
  it('is the meaning up to its first colon or full stop', () => {
    expect(errorTitle('131026')).toBe('Undeliverable')
    expect(errorTitle('131047')).toBe('Outside the 24-hour window')
    expect(errorTitle('131000')).toBe('Something went wrong at the platform')
    expect(errorTitle('KEY_REVOKED')).toBe('Its API key was revoked before it went')
  })

  it('is null for a code Dispatch does not know', () => {
    expect(errorTitle('999999')).toBeNull()
  })

  it('is a few words, and the start of its meaning, for every code', () => {
    for (const [code, meaning] of Object.entries(ERROR_MEANINGS)) {
      const title = errorTitle(code) ?? ''
      expect(meaning.startsWith(title), code).toBe(true)
      expect(title.length, code).toBeGreaterThan(5)
      expect(title.length, code).toBeLessThanOrEqual(70)
    }
  })
})
