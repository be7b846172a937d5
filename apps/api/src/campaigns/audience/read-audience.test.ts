import { Readable } from 'node:stream'
import { type AudienceRow, PlainRows } from '@dispatch/db'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../errors.ts'
import { readAudience } from './read-audience.ts'

async function readAll(text: string, limits = { maxRows: 10, maxBytes: 10_000 }) {
  const rows: AudienceRow[] = []
  for await (const batch of readAudience(Readable.from([Buffer.from(text)]), 'csv', ['name'], limits)) {
    for (const part of batch) rows.push(...(part instanceof PlainRows ? part.toRows() : [part]))
  }
  return rows
}

describe('readAudience', () => {
  it('judges each row of a CSV as it streams in, dropping a BOM', async () => {
    const rows = await readAll('\uFEFFphone,name\n+5511987654321,Ana\n+1,Bo\n')
    expect(rows.map((r) => [r.line, r.reason])).toEqual([
      [2, null],
      [3, 'invalid_recipient'],
    ])
  })

  it('stops the upload with 413 past the rows or the bytes an audience may hold', async () => {
    const three = 'phone,name\n+5511987654321,A\n+5511987654322,B\n+5511987654323,C\n'
    await expect(readAll(three, { maxRows: 2, maxBytes: 10_000 })).rejects.toMatchObject({
      errorCode: 'PAYLOAD_TOO_LARGE',
      message: expect.stringMatching(/more than 2 rows/),
    })
    await expect(readAll(three, { maxRows: 10, maxBytes: 20 })).rejects.toBeInstanceOf(AppError)
    expect(await readAll(three, { maxRows: 3, maxBytes: three.length })).toHaveLength(3)
  })
})
