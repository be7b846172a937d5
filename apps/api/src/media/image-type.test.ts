import { describe, expect, it } from 'vitest'
import { imageTypeOf } from './image-type.ts'

const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex')
const jpeg = Buffer.from('ffd8ffe000104a464946', 'hex')

describe('imageTypeOf', () => {
  it('knows a PNG and a JPEG by their first bytes', () => {
    expect(imageTypeOf(png)).toBe('image/png')
    expect(imageTypeOf(jpeg)).toBe('image/jpeg')
    expect(imageTypeOf(new Uint8Array(png))).toBe('image/png')
  })

  it.each([
    ['a GIF', Buffer.from('GIF89a\x01\x00\x01\x00\x80\x00\x00', 'latin1')],
    ['WebP', Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1')],
    ['text', Buffer.from('just some text, named photo.png')],
    ['a PNG signature without its IHDR chunk', Buffer.concat([png.subarray(0, 8), Buffer.alloc(8)])],
    ['a PNG cut short', png.subarray(0, 10)],
    ['a JPEG marker alone', jpeg.subarray(0, 3)],
    ['nothing', Buffer.alloc(0)],
  ])('refuses %s', (_, bytes) => {
    expect(imageTypeOf(bytes)).toBeUndefined()
  })
})
