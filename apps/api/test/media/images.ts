import { createHash } from 'node:crypto'
import { crc32, deflateSync } from 'node:zlib'
import type { FastifyInstance } from 'fastify'

/** A PNG chunk: length, type, data, and the CRC of type and data. */
function pngChunk(type: string, data: Buffer) {
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(typed))
  return Buffer.concat([length, typed, crc])
}

/** A real PNG: `size`×`size` 8-bit RGB pixels, all one colour. */
export function png(size = 2, rgb: [number, number, number] = [0, 128, 255]): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header.set([8, 2, 0, 0, 0], 8) // bit depth 8, colour type 2 (RGB), no interlace
  const row = Buffer.from([0, ...Array.from({ length: size }, () => rgb).flat()]) // filter 0, then pixels
  const pixels = Buffer.concat(Array.from({ length: size }, () => row))
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(pixels)),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

const segment = (marker: number, data: number[]) =>
  Buffer.from([0xff, marker, (data.length + 2) >> 8, (data.length + 2) & 0xff, ...data])

/**
 * A real baseline JPEG: one 8×8 block of mid grey in each of Y, Cb and Cr. Every coefficient is 0,
 * so one-symbol Huffman tables suffice: per block a DC difference of 0 (code `0`) and an
 * end-of-block (code `0`): six zero bits, padded with ones. `comment` pads it with a COM segment.
 */
export function jpeg(comment = ''): Buffer {
  const oneSymbolTable = (tableClass: number) => [tableClass << 4, 1, ...Array(15).fill(0), 0]
  const components = [1, 2, 3]
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, [...Buffer.from('JFIF\0', 'latin1'), 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...(comment ? [segment(0xfe, [...Buffer.from(comment, 'latin1')])] : []),
    segment(0xdb, [0, ...Array(64).fill(1)]),
    segment(0xc0, [8, 0, 8, 0, 8, 3, ...components.flatMap((id) => [id, 0x11, 0])]),
    segment(0xc4, oneSymbolTable(0)),
    segment(0xc4, oneSymbolTable(1)),
    segment(0xda, [3, ...components.flatMap((id) => [id, 0]), 0, 63, 0]),
    Buffer.from([0b00000011, 0xff, 0xd9]),
  ])
}

/** A JPEG of exactly `bytes` bytes, its comment segment making up the difference. */
export function jpegOfSize(bytes: number): Buffer {
  const bare = jpeg(' ').length - 1
  return jpeg('x'.repeat(bytes - bare))
}

/** A 1×1 GIF: a real image, of a type the platform does not take. */
export const GIF = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64')

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** A form part: a text value, or a file with its name and declared type. */
export type Part = [name: string, value: string | { bytes: Buffer; filename: string; type?: string }]

/** A multipart body as fetch writes it, and the Content-Type naming its boundary. */
export async function multipart(parts: Part[]) {
  const form = new FormData()
  for (const [name, value] of parts) {
    if (typeof value === 'string') form.append(name, value)
    else form.append(name, new Blob([value.bytes], { type: value.type ?? '' }), value.filename)
  }
  const encoded = new Response(form)
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type') as string,
  }
}

export const filePart = (bytes: Buffer, filename = 'photo.png', type = 'image/png'): Part => [
  'file',
  { bytes, filename, type },
]

/** `POST /api/third-party/media` with these parts, as `curl -F` would send them. */
export async function upload(
  app: FastifyInstance,
  key: string | undefined,
  parts: Part[],
  headers: Record<string, string> = {},
) {
  const { payload, contentType } = await multipart(parts)
  return app.inject({
    method: 'POST',
    url: '/api/third-party/media',
    headers: { 'content-type': contentType, ...(key ? { 'x-api-key': key } : {}), ...headers },
    payload,
  })
}
