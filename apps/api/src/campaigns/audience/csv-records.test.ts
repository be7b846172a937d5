import { CAMPAIGN_AUDIENCE_MAX_LINE_CHARS } from '@dispatch/contracts'
import { describe, expect, it } from 'vitest'
import { CsvRecords } from './csv-records.ts'
import { NdjsonLines } from './ndjson-lines.ts'

/** Every record of `text` pushed in pieces of `size` characters. */
function read(text: string, size: number) {
  const reader = new CsvRecords()
  const records = []
  for (let at = 0; at < text.length; at += size) records.push(...reader.push(text.slice(at, at + size)))
  records.push(...reader.push('', true))
  return records.map(({ line, fields, problem }) => ({ line, fields, ...(problem ? { problem } : {}) }))
}

const SAMPLE =
  'phone,name,note\r\n' +
  '+5511987654321,"Ana, ""the boss""","two\nlines"\r\n' +
  '\r\n' +
  '+5511987654322,Bo,plain\n' +
  '+5511987654323,"Cy"x,bad\n' +
  '+5511987654324,5" screen,"last"'

const EXPECTED = [
  { line: 1, fields: ['phone', 'name', 'note'] },
  { line: 2, fields: ['+5511987654321', 'Ana, "the boss"', 'two\nlines'] },
  { line: 4, fields: ['+5511987654322', 'Bo', 'plain'] },
  { line: 5, fields: null, problem: 'text follows a closing quote' },
  { line: 6, fields: ['+5511987654324', '5" screen', 'last'] },
]

describe('CsvRecords', () => {
  it('reads RFC 4180 records however the text is cut into chunks', () => {
    for (const size of [1, 2, 3, 5, 7, 16, SAMPLE.length])
      expect(read(SAMPLE, size), `chunks of ${size}`).toEqual(EXPECTED)
  })

  it('keeps each record as uploaded, without its line ending', () => {
    const reader = new CsvRecords()
    const records = reader.push('a,"b\nc"\r\nd,e\n', true)
    expect(records.map((r) => r.raw)).toEqual(['a,"b\nc"', 'd,e'])
  })

  it('gives up a line too long (an unclosed quote) and reads on from the next newline, holding no more', () => {
    const long = `+5511987654321,"${'x'.repeat(CAMPAIGN_AUDIENCE_MAX_LINE_CHARS + 10)}\n+5511987654322,ok\n`
    const records = read(`phone,v\n${long}`, 4096)
    expect(records[1]).toMatchObject({ line: 2, fields: null, problem: expect.stringMatching(/longer than/) })
    expect(records[2]).toEqual({ line: 3, fields: ['+5511987654322', 'ok'] })
  })

  it('reads a quoted field never closed at the end as unreadable', () => {
    expect(read('a\n"open', 3)).toEqual([
      { line: 1, fields: ['a'] },
      { line: 2, fields: null, problem: 'a quoted field is never closed' },
    ])
  })
})

describe('NdjsonLines', () => {
  it('splits lines across chunks, counting blank ones, a last line without a newline', () => {
    const lines = new NdjsonLines()
    const got = [...lines.push('{"a":1}\r\n\n{"b"'), ...lines.push(':2}\n{"c":3}'), ...lines.push('', true)]
    expect(got).toEqual([
      { line: 1, text: '{"a":1}' },
      { line: 3, text: '{"b":2}' },
      { line: 4, text: '{"c":3}' },
    ])
  })
})
