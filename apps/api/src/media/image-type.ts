import type { MediaMimeType } from '@dispatch/contracts'

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
const PNG_FIRST_CHUNK = Buffer.from('IHDR', 'latin1')
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff])

/** How many leading bytes `imageTypeOf` needs to decide, when the file has that many. */
export const IMAGE_HEADER_BYTES = 16

/**
 * The image type a file's first bytes say it is, never its name or declared type: a PNG starts
 * with its 8-byte signature and then its IHDR chunk, a JPEG with a start-of-image marker and the
 * first marker of the next segment. Anything else (a GIF, text named `.png`) is `undefined`.
 */
export function imageTypeOf(head: Uint8Array): MediaMimeType | undefined {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength)
  if (
    bytes.length >= IMAGE_HEADER_BYTES &&
    bytes.subarray(0, 8).equals(PNG_SIGNATURE) &&
    bytes.subarray(12, 16).equals(PNG_FIRST_CHUNK)
  ) {
    return 'image/png'
  }
  if (bytes.length >= 4 && bytes.subarray(0, 3).equals(JPEG_START)) return 'image/jpeg'
  return undefined
}
