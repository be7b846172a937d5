import { describe, expect, it } from 'vitest'
import { MAX_SNIFF_BYTES, sniffMediaType, TEXT_SNIFF_BYTES } from './media-type.ts'

const zipEntry = (name: string, data: Buffer, dataDescriptor = false) => {
  const header = Buffer.alloc(30)
  header.writeUInt32LE(0x04034b50, 0)
  header.writeUInt16LE(dataDescriptor ? 0x08 : 0, 6)
  header.writeUInt32LE(dataDescriptor ? 0 : data.length, 18)
  header.writeUInt16LE(name.length, 26)
  return Buffer.concat([header, Buffer.from(name, 'latin1'), data])
}

describe('sniffMediaType', () => {
  it('waits for the first bytes before any verdict, unless the file is that short', () => {
    expect(sniffMediaType(Buffer.from('%PDF-1.7'), false)).toBe('more')
    expect(sniffMediaType(Buffer.from('%PDF-1.7'), true)).toMatchObject({ mimeType: 'application/pdf' })
  })

  it('walks ZIP entries past a large first one, and past the first bytes read when it must', () => {
    const bigFirst = Buffer.concat([
      zipEntry('[Content_Types].xml', Buffer.alloc(100_000)),
      zipEntry('xl/workbook.xml', Buffer.from('<x/>')),
    ])
    expect(sniffMediaType(bigFirst.subarray(0, 4096), false)).toBe('more')
    expect(sniffMediaType(bigFirst, false)).toMatchObject({
      kind: 'document',
      mimeType: expect.stringContaining('sheet'),
    })
    // Sizes after the data (flag bit 3): the next entry is found by its signature.
    const streamed = Buffer.concat([
      zipEntry('docProps/app.xml', Buffer.alloc(500, 1), true),
      zipEntry('ppt/x.xml', Buffer.alloc(10)),
    ])
    expect(sniffMediaType(streamed, true)).toMatchObject({
      mimeType: expect.stringContaining('presentation'),
    })
    // No Office folder before the central directory, or within the bytes read: none.
    expect(
      sniffMediaType(
        Buffer.concat([zipEntry('a.txt', Buffer.alloc(10)), Buffer.from('PK\x01\x02'), Buffer.alloc(100)]),
        false,
      ),
    ).toBeUndefined()
    expect(
      sniffMediaType(Buffer.concat([zipEntry('a.bin', Buffer.alloc(MAX_SNIFF_BYTES))]), false),
    ).toBeUndefined()
  })

  it('judges text on its first 64 KiB, a character cut at the end of what was read included', () => {
    const text = Buffer.from('ação '.repeat(20_000))
    expect(sniffMediaType(text.subarray(0, 1000), false)).toBe('more')
    // Cut inside a two-byte character, at the end of what was read and at the 64 KiB mark.
    const cut = text.indexOf(Buffer.from('ç')) + 1
    expect(sniffMediaType(text.subarray(0, cut), false)).toBe('more')
    expect(sniffMediaType(text, false)).toMatchObject({ kind: 'document', mimeType: 'text/plain' })
    expect(text.length).toBeGreaterThan(TEXT_SNIFF_BYTES)
    // A character cut at the very end of the whole file is not text.
    expect(sniffMediaType(text.subarray(0, cut), true)).toBeUndefined()
    expect(sniffMediaType(Buffer.from('ok\r\n\ttabbed\f\n'), true)).toMatchObject({ mimeType: 'text/plain' })
    expect(sniffMediaType(Buffer.from('bell\x07'), true)).toBeUndefined()
  })

  it('tells an animated WebP by its VP8X flag alone, and a VP8X without it as static', () => {
    const vp8x = (flags: number) =>
      Buffer.concat([
        Buffer.from('RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0', 'latin1'),
        Buffer.from([flags]),
        Buffer.alloc(60),
      ])
    expect(sniffMediaType(vp8x(0x02), true)).toMatchObject({
      kind: 'sticker',
      animated: true,
      maxBytes: 500 * 1024,
    })
    expect(sniffMediaType(vp8x(0x10), true)).toMatchObject({
      kind: 'sticker',
      animated: false,
      maxBytes: 100 * 1024,
    })
  })

  it('does not take MPEG audio of other layers, nor a stray 0xFF', () => {
    expect(
      sniffMediaType(Buffer.concat([Buffer.from('fffd9064', 'hex'), Buffer.alloc(60)]), true),
    ).toBeUndefined()
    expect(
      sniffMediaType(Buffer.concat([Buffer.from('ff00', 'hex'), Buffer.alloc(60)]), true),
    ).toBeUndefined()
  })
})
