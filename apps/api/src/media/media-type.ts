import {
  ANIMATED_STICKER_MAX_BYTES,
  MEDIA_LIMITS,
  type MediaKind,
  type MediaMimeType,
} from '@dispatch/contracts'
import { imageTypeOf } from './image-type.ts'

/** What a file's first bytes say it is, and the most bytes WhatsApp takes of that. */
export interface MediaType {
  kind: MediaKind
  mimeType: MediaMimeType
  maxBytes: number
  /** A sticker whose WebP says it is animated (its larger limit). */
  animated?: boolean
}

/** Bytes read before any verdict: enough for every signature below but the containers'. */
export const MIN_SNIFF_BYTES = 64
/** The most bytes read in search of a verdict (ZIP entries, an OLE directory, text). */
export const MAX_SNIFF_BYTES = 1024 * 1024
/** Plain text is judged on this many leading bytes (or the whole file, when shorter). */
export const TEXT_SNIFF_BYTES = 64 * 1024

/** A verdict, `'more'` when more bytes could still tell, or `undefined` for none WhatsApp takes. */
export type Sniffed = MediaType | 'more' | undefined

const ascii = (bytes: Buffer, at: number, length: number) => bytes.toString('latin1', at, at + length)
const of = (kind: MediaKind, mimeType: MediaMimeType): MediaType => ({
  kind,
  mimeType,
  maxBytes: MEDIA_LIMITS[kind],
})

/**
 * The media type a file's leading bytes say it is, never its name or declared type. `head` is the
 * file's first bytes; `ended` says they are the whole file. Signatures:
 * - JPEG, PNG (image-type.ts); WebP (`RIFF….WEBP`) is a sticker, animated when its `VP8X` header
 *   sets the animation flag or an `ANIM` chunk follows.
 * - ISO media (`ftyp` at 4): brand `M4A `/`M4B ` audio/mp4, `3gp*` video/3gpp, `qt  ` and `3g2*`
 *   none, any other brand video/mp4. AMR (`#!AMR\n`), OGG whose first packet is `OpusHead`, MP3
 *   (`ID3`, or an MPEG layer III frame header), AAC (an ADTS frame header).
 * - PDF (`%PDF-`); a ZIP whose local entries (within `MAX_SNIFF_BYTES`) include `word/`, `xl/` or
 *   `ppt/`: docx, xlsx, pptx; an OLE2 compound file whose first directory sector (within
 *   `MAX_SNIFF_BYTES`) names `WordDocument`, `Workbook`/`Book` or `PowerPoint Document`.
 * - Otherwise plain text: the first `TEXT_SNIFF_BYTES` (or all) are UTF-8 with no control
 *   character but tab, line feed, form feed and carriage return.
 */
export function sniffMediaType(head: Buffer, ended: boolean): Sniffed {
  if (!ended && head.length < MIN_SNIFF_BYTES) return 'more'
  const final = ended || head.length >= MAX_SNIFF_BYTES
  const image = imageTypeOf(head)
  if (image) return of('image', image)
  if (ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 4) === 'WEBP') return webp(head)
  if (ascii(head, 4, 4) === 'ftyp') return isoMedia(ascii(head, 8, 4))
  if (ascii(head, 0, 6) === '#!AMR\n') return of('audio', 'audio/amr')
  if (ascii(head, 0, 4) === 'OggS') {
    const segments = head[26] ?? 0
    return ascii(head, 27 + segments, 8) === 'OpusHead' ? of('audio', 'audio/ogg') : undefined
  }
  if (ascii(head, 0, 3) === 'ID3' || mp3Frame(head)) return of('audio', 'audio/mpeg')
  if (adtsFrame(head)) return of('audio', 'audio/aac')
  if (ascii(head, 0, 5) === '%PDF-') return of('document', 'application/pdf')
  if (ascii(head, 0, 4) === 'PK\x03\x04') return officeZip(head, final)
  if (head.subarray(0, 8).equals(OLE_SIGNATURE)) return officeOle(head, final)
  return plainText(head, ended)
}

function webp(head: Buffer): MediaType {
  const chunk = ascii(head, 12, 4)
  // VP8X flags (byte 20): bit 1 is "animation"; an ANIM chunk follows the VP8X header (30 bytes).
  const animated = chunk === 'VP8X' && (((head[20] ?? 0) & 0x02) !== 0 || ascii(head, 30, 4) === 'ANIM')
  return {
    kind: 'sticker',
    mimeType: 'image/webp',
    maxBytes: animated ? ANIMATED_STICKER_MAX_BYTES : MEDIA_LIMITS.sticker,
    animated,
  }
}

function isoMedia(brand: string): MediaType | undefined {
  if (brand === 'M4A ' || brand === 'M4B ') return of('audio', 'audio/mp4')
  if (brand.startsWith('3gp')) return of('video', 'video/3gpp')
  // QuickTime and 3GPP2 are ISO media too, but not types WhatsApp takes.
  if (brand === 'qt  ' || brand.startsWith('3g2') || !/^[\x20-\x7e]{4}$/.test(brand)) return undefined
  return of('video', 'video/mp4')
}

/** An MPEG audio layer III frame header: 11 sync bits, a version, layer 01, sane rates. */
function mp3Frame(head: Buffer): boolean {
  const [a = 0, b = 0, c = 0] = head
  return (
    a === 0xff &&
    (b & 0xe0) === 0xe0 &&
    (b & 0x18) !== 0x08 &&
    (b & 0x06) === 0x02 &&
    c >> 4 !== 15 &&
    ((c >> 2) & 3) !== 3
  )
}

/** An ADTS (AAC) frame header: 12 sync bits, layer 00, a valid sampling index. */
function adtsFrame(head: Buffer): boolean {
  const [a = 0, b = 0, c = 0] = head
  return a === 0xff && (b & 0xf6) === 0xf0 && ((c >> 2) & 0x0f) < 13
}

const OOXML: Array<[prefix: string, MediaMimeType]> = [
  ['word/', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['xl/', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  ['ppt/', 'application/vnd.openxmlformats-officedocument.presentationml.presentation'],
]
const LOCAL_HEADER = Buffer.from('PK\x03\x04', 'latin1')

/** Walks a ZIP's local file headers for the folder an Office Open XML file keeps its part in. */
function officeZip(head: Buffer, final: boolean): Sniffed {
  let at = 0
  while (at + 30 <= head.length && head.readUInt32LE(at) === 0x04034b50) {
    const flags = head.readUInt16LE(at + 6)
    const compressed = head.readUInt32LE(at + 18)
    const nameLength = head.readUInt16LE(at + 26)
    const extraLength = head.readUInt16LE(at + 28)
    if (at + 30 + nameLength > head.length) break
    const name = ascii(head, at + 30, nameLength)
    const found = OOXML.find(([prefix]) => name.startsWith(prefix))
    if (found) return of('document', found[1])
    const data = at + 30 + nameLength + extraLength
    // Sizes told after the data (flag bit 3): the next entry is found by its signature.
    at = flags & 0x08 && compressed === 0 ? head.indexOf(LOCAL_HEADER, data) : data + compressed
    if (at < 0) break
  }
  // Past the entries read: more may tell, unless the central directory (or the limit) is reached.
  return !final && (at < 0 || at + 30 > head.length || head.readUInt32LE(at) === 0x04034b50)
    ? 'more'
    : undefined
}

const OLE_SIGNATURE = Buffer.from('d0cf11e0a1b11ae1', 'hex')
const OLE_STREAMS: Record<string, MediaMimeType> = {
  WordDocument: 'application/msword',
  Workbook: 'application/vnd.ms-excel',
  Book: 'application/vnd.ms-excel',
  'PowerPoint Document': 'application/vnd.ms-powerpoint',
}

/** Reads the entries of an OLE2 compound file's first directory sector for an Office stream. */
function officeOle(head: Buffer, final: boolean): Sniffed {
  if (head.length < 512) return final ? undefined : 'more'
  const sectorSize = 1 << head.readUInt16LE(0x1e)
  const firstDirectorySector = head.readUInt32LE(0x30)
  if (sectorSize !== 512 && sectorSize !== 4096) return undefined
  if (firstDirectorySector >= 0xfffffffa) return undefined
  const start = (firstDirectorySector + 1) * sectorSize
  if (start + sectorSize > head.length) return final ? undefined : 'more'
  for (let entry = start; entry < start + sectorSize; entry += 128) {
    const nameLength = head.readUInt16LE(entry + 0x40)
    if (nameLength < 2 || nameLength > 64) continue
    const mimeType = OLE_STREAMS[head.toString('utf16le', entry, entry + nameLength - 2)]
    if (mimeType) return of('document', mimeType)
  }
  return undefined
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })
/** Whether a byte is a control character text does not hold: all but tab, LF, FF, CR; and DEL. */
const isControl = (byte: number) =>
  (byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13) || byte === 0x7f

function plainText(head: Buffer, ended: boolean): Sniffed {
  let bytes = head.subarray(0, TEXT_SNIFF_BYTES)
  if (!ended || head.length > TEXT_SNIFF_BYTES) {
    // A character cut at the end of what was read is not an error: leave out its leading bytes.
    let cut = bytes.length
    for (let back = 1; back <= 3 && cut - back >= 0; back++) {
      const byte = bytes[cut - back] ?? 0
      if ((byte & 0xc0) === 0xc0) {
        if (back < utf8Length(byte)) cut -= back
        break
      }
      if ((byte & 0x80) === 0) break
    }
    bytes = bytes.subarray(0, cut)
  }
  if (bytes.length === 0 || bytes.some(isControl)) return undefined
  try {
    UTF8.decode(bytes)
  } catch {
    return undefined
  }
  return ended || head.length >= TEXT_SNIFF_BYTES ? of('document', 'text/plain') : 'more'
}

const utf8Length = (lead: number) => (lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2)
