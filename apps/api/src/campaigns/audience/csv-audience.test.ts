import { type AudienceRow, PlainRows } from '@dispatch/db'
import { describe, expect, it } from 'vitest'
import { csvColumns } from './columns.ts'
import { CsvAudience } from './csv-audience.ts'
import { CsvRecords } from './csv-records.ts'
import { judgeCsvRecord } from './judge-row.ts'

/** Every row as the text reader judges it: the file decoded whole, read record by record. */
function asText(bytes: Buffer, expected: string[] | null): AudienceRow[] {
  const records = new CsvRecords().push(new TextDecoder().decode(bytes), true)
  const [header, ...rest] = records
  const columns = csvColumns(header?.fields ?? null, expected)
  return rest.map((record) => judgeCsvRecord(record, columns))
}

/** Every row as CsvAudience judges it, the bytes given in chunks cut at `cuts`. */
function asBytes(bytes: Buffer, expected: string[] | null, cuts: number[]) {
  const reader = new CsvAudience(expected)
  const rows: AudienceRow[] = []
  let plain = 0
  const take = (batch: ReturnType<CsvAudience['push']>) => {
    for (const part of batch) {
      if (part instanceof PlainRows) plain += part.count
      rows.push(...(part instanceof PlainRows ? part.toRows() : [part]))
    }
  }
  let from = 0
  for (const cut of [...cuts, bytes.length]) {
    take(reader.push(bytes.subarray(from, cut)))
    from = cut
  }
  take(reader.push(Buffer.alloc(0), true))
  return { rows, plain, counted: reader.rows }
}

const FILES: Array<[string, string, string[] | null]> = [
  [
    'plain lines, CRLF, blank lines, a BOM',
    '\uFEFFphone,name\r\n+5511987654321,Ana\r\n\r\n+5511987654322, Bo \n\n+5511987654323,Cy',
    ['name'],
  ],
  [
    'every way a line is not plain',
    'phone,name,day\n+5511987654321,Ana,1\n+1,Bo,2\n+5511987654322,,3\n+5511987654323,   ,4\n' +
      '+5511987654324,a\\b,5\n+5511987654325,tab\there,6\n+5511987654326,Zé,7\n+5511987654327,\u00a0,8\n' +
      '+5511987654321,dup,9\n+5511987654328,extra,10,11\n+5511987654329,few\n 5511987654330,x,12\n' +
      '+0511987654331,x,13\n+55119876543319999,x,14\n+5511987654332,nul\u0000,15\n+5511987654333,Ok,16\n',
    ['name', 'day'],
  ],
  [
    'quoted fields, a quoted newline, then plain lines again',
    'phone,name\n+5511987654321,"Ana, ""A"""\n+5511987654322,"two\nlines"\n+5511987654323,Cy\n' +
      '"+5511987654324",Di\n+5511987654325,"open\n+5511987654326,Ed\n',
    null,
  ],
  [
    'a userId column beside the phone',
    'phone,userId,name\n+5511987654321,,Ana\n,US.13491208655302741918,Bo\n+5511987654322, ,Cy\n',
    null,
  ],
  ['integer-like variable names', 'name,2,phone,1\nAna,b,+5511987654321,a\n', null],
  ['invalid UTF-8', 'phone,name\n+5511987654321,Ana\n+5511987654322,B\xffo\n', null],
  ['a header alone, no newline', 'phone,name', null],
]

describe('CsvAudience', () => {
  for (const [what, text, expected] of FILES) {
    it(`judges every row as the text reader does, however the bytes are cut: ${what}`, () => {
      const bytes = what === 'invalid UTF-8' ? Buffer.from(text, 'latin1') : Buffer.from(text)
      const want = asText(bytes, expected)
      for (let a = 0; a <= bytes.length; a++) {
        const whole = asBytes(bytes, expected, a === 0 ? [] : [a])
        expect(whole.rows, `cut at ${a}`).toEqual(want)
        expect(whole.counted).toBe(want.length)
      }
      const byByte = asBytes(
        bytes,
        expected,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      )
      expect(byByte.rows).toEqual(want)
    })
  }

  it('takes plain lines as bytes, making no row object for them', () => {
    const text = `phone,name\n${Array.from({ length: 100 }, (_, i) => `+55119876${String(i).padStart(5, '0')},N${i}`).join('\n')}\n`
    const { rows, plain } = asBytes(Buffer.from(text), ['name'], [])
    expect(rows).toHaveLength(100)
    expect(plain).toBe(100)
    expect(rows[99]).toMatchObject({ line: 101, phone: '+5511987600099', variables: { name: 'N99' } })
  })

  it('gives up a line longer than the longest, as the text reader does, and reads on', () => {
    const long = 'x'.repeat(200 * 1024)
    const bytes = Buffer.from(`phone,name\n+5511987654321,${long}\n+5511987654322,Bo\n`)
    const cuts = Array.from({ length: Math.floor(bytes.length / 16384) }, (_, i) => (i + 1) * 16384)
    const { rows } = asBytes(bytes, null, cuts)
    expect(rows.map((r) => [r.line, r.reason])).toEqual([
      [2, 'malformed_line'],
      [3, null],
    ])
  })
})
