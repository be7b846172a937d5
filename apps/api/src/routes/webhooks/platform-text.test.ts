import { toStorableText } from '@dispatch/contracts'
import { describe, expect, it } from 'vitest'
import { toStorableJson } from './platform-text.ts'

describe('toStorableText', () => {
  it('replaces NUL and unpaired surrogates with U+FFFD, keeps everything else', () => {
    expect(toStorableText('a\u0000b\ud800c\udfffd')).toBe('a\uFFFDb\uFFFDc\uFFFDd')
    expect(toStorableText('\udfff\ud800')).toBe('\uFFFD\uFFFD')
    expect(toStorableText('ok \ud83d\ude00 é \u0001')).toBe('ok \ud83d\ude00 é \u0001')
  })
})

describe('toStorableJson', () => {
  it('cleans every string, keys included, in objects and arrays', () => {
    expect(toStorableJson({ 'k\u0000': ['\ud800', { x: 'y\u0000' }, 1, null, true] })).toEqual({
      'k\uFFFD': ['\uFFFD', { x: 'y\uFFFD' }, 1, null, true],
    })
    expect(toStorableJson('\u0000')).toBe('\uFFFD')
    expect(toStorableJson(null)).toBe(null)
  })

  it('keeps a "__proto__" key as plain data', () => {
    const cleaned = toStorableJson(JSON.parse('{"__proto__":{"polluted":"\\u0000"}}')) as Record<
      string,
      unknown
    >
    expect(Object.getPrototypeOf(cleaned)).toBe(Object.prototype)
    expect(Object.getOwnPropertyDescriptor(cleaned, '__proto__')?.value).toEqual({ polluted: '\uFFFD' })
  })

  it('walks nesting deeper than the call stack', () => {
    const depth = 300_000
    const cleaned = toStorableJson(JSON.parse(`${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}`))
    let inner = cleaned
    for (let i = 0; i < depth; i++) inner = (inner as unknown[])[0]
    expect(inner).toBe('\uFFFD')
  })
})
