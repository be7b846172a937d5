import { describe, expect, it } from 'vitest'
import { bodyText, csvRecords, formatOf, previewRows, renderBody } from './audience-preview.ts'

describe('the audience preview', () => {
  it('reads CSV records with quotes, doubled quotes, CRLF and a quoted newline', () => {
    expect(csvRecords('phone,1\r\n+5511,"Ana, ""A"""\n+5512,"two\nlines"\n')).toEqual([
      ['phone', '1'],
      ['+5511', 'Ana, "A"'],
      ['+5512', 'two\nlines'],
    ])
    // Cut off mid-record: the partial one is left out.
    expect(csvRecords('phone,1\n+5511,Ana\n+55', true)).toEqual([
      ['phone', '1'],
      ['+5511', 'Ana'],
    ])
  })

  it('maps CSV columns by header to variables, lines counted from the header', () => {
    const rows = previewRows('Phone,1,2,clientReference\n+5511,Ana,BR-1,x\n+5512,Bia\n', 'csv', false)
    expect(rows).toEqual([
      { line: 2, recipient: '+5511', variables: { '1': 'Ana', '2': 'BR-1' } },
      {
        line: 3,
        recipient: '+5512',
        variables: { '1': 'Bia', '2': '' },
        problem: '2 fields; the header has 4',
      },
    ])
  })

  it('reads NDJSON lines, saying which is not an object', () => {
    const text = '{"userId":"BR.1","variables":{"first_name":"Ana"}}\nnot json\n{"phone":"+5511"'
    expect(previewRows(text, 'ndjson', true)).toEqual([
      { line: 1, recipient: 'BR.1', variables: { first_name: 'Ana' } },
      { line: 2, recipient: '', variables: {}, problem: 'not a JSON object' },
    ])
  })

  it('knows the format by type or name', () => {
    expect(formatOf({ name: 'a.ndjson', type: '' })).toBe('ndjson')
    expect(formatOf({ name: 'a.jsonl', type: '' })).toBe('ndjson')
    expect(formatOf({ name: 'a.txt', type: 'application/x-ndjson' })).toBe('ndjson')
    expect(formatOf({ name: 'a.csv', type: 'text/csv' })).toBe('csv')
  })

  it('fills the body, naming what a row leaves out', () => {
    const body = bodyText([
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Olá {{1}}, pedido {{ 2 }}.' },
    ])
    expect(body).toBe('Olá {{1}}, pedido {{ 2 }}.')
    expect(renderBody(body ?? '', { '1': 'Ana' })).toEqual([
      { text: 'Olá ' },
      { variable: '1', value: 'Ana' },
      { text: ', pedido ' },
      { variable: '2', value: null },
      { text: '.' },
    ])
  })
})
