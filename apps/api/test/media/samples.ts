import { crc32 } from 'node:zlib'

/**
 * The leading bytes of a file of each media kind, as its format writes them, padded to `size`
 * bytes: the upload tells a type by its first bytes only, so the rest may be anything (zeros).
 */
const padded = (head: Buffer, size: number, fill = 0) =>
  size <= head.length ? head : Buffer.concat([head, Buffer.alloc(size - head.length, fill)])

/** An ISO media file (MP4, 3GPP, M4A, QuickTime): an `ftyp` box of `brand`, then an `mdat` box. */
export function isoMedia(brand: string, size = 256): Buffer {
  const ftyp = Buffer.alloc(24)
  ftyp.writeUInt32BE(24, 0)
  ftyp.write('ftyp', 4, 'latin1')
  ftyp.write(brand, 8, 'latin1')
  ftyp.write('isommp42', 16, 'latin1')
  const mdat = Buffer.alloc(8)
  mdat.writeUInt32BE(Math.max(8, size - 24), 0)
  mdat.write('mdat', 4, 'latin1')
  return padded(Buffer.concat([ftyp, mdat]), size)
}

/** ADTS frames (AAC LC, 44.1 kHz, stereo). */
export const aac = (size = 256) => padded(Buffer.from('fff15080021ffc', 'hex'), size)
/** AMR narrowband. */
export const amr = (size = 256) => padded(Buffer.from('#!AMR\n\x3c', 'latin1'), size)
/** MP3 with an ID3v2 tag first, or a bare MPEG-1 layer III frame (128 kbit/s, 44.1 kHz). */
export const mp3 = (size = 256) => padded(Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), size)
export const mp3Frame = (size = 256) => padded(Buffer.from('fffb9064', 'hex'), size)

/** An OGG stream whose first packet is `packet` (`OpusHead…`, or `\x01vorbis…`). */
export function ogg(packet: Buffer, size = 256): Buffer {
  const page = Buffer.alloc(28)
  page.write('OggS', 0, 'latin1')
  page[5] = 0x02 // beginning of stream
  page[26] = 1 // one segment
  page[27] = packet.length
  return padded(Buffer.concat([page, packet]), size)
}
export const opus = (size = 256) =>
  ogg(Buffer.from('OpusHead\x01\x02\x38\x01\x80\xbb\x00\x00\x00\x00\x00', 'latin1'), size)
export const vorbis = (size = 256) => ogg(Buffer.from('\x01vorbis\x00\x00\x00\x00\x02', 'latin1'), size)

export const pdf = (size = 256) => padded(Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), size)

/** A ZIP of stored entries, as an Office Open XML file starts: `[Content_Types].xml` first. */
export function zip(names: string[], size = 512): Buffer {
  const entries = names.map((name) => {
    const data = Buffer.from(`<xml name="${name}"/>`)
    const header = Buffer.alloc(30)
    header.writeUInt32LE(0x04034b50, 0)
    header.writeUInt16LE(20, 4)
    header.writeUInt32LE(crc32(data), 14)
    header.writeUInt32LE(data.length, 18)
    header.writeUInt32LE(data.length, 22)
    header.writeUInt16LE(Buffer.byteLength(name), 26)
    return Buffer.concat([header, Buffer.from(name), data])
  })
  // A central directory signature ends the entries (its records are not needed to tell the type).
  return padded(Buffer.concat([...entries, Buffer.from('PK\x01\x02', 'latin1')]), size)
}
export const docx = (size?: number) => zip(['[Content_Types].xml', '_rels/.rels', 'word/document.xml'], size)
export const xlsx = (size?: number) => zip(['[Content_Types].xml', '_rels/.rels', 'xl/workbook.xml'], size)
export const pptx = (size?: number) =>
  zip(['[Content_Types].xml', '_rels/.rels', 'ppt/presentation.xml'], size)

/** An OLE2 compound file (512-byte sectors) whose directory names a root and `stream`. */
export function ole(stream: string, size = 2048): Buffer {
  const header = Buffer.alloc(512)
  Buffer.from('d0cf11e0a1b11ae1', 'hex').copy(header)
  header.writeUInt16LE(0x3e, 0x18) // minor version
  header.writeUInt16LE(3, 0x1a) // major version 3: 512-byte sectors
  header.writeUInt16LE(0xfffe, 0x1c) // little-endian
  header.writeUInt16LE(9, 0x1e) // sector shift
  header.writeUInt16LE(6, 0x20) // mini sector shift
  header.writeUInt32LE(1, 0x2c) // one FAT sector
  header.writeUInt32LE(1, 0x30) // the directory starts at sector 1 (after sector 0)
  const directory = Buffer.alloc(512)
  const entry = (index: number, name: string, type: number) => {
    const at = index * 128
    directory.write(name, at, 'utf16le')
    directory.writeUInt16LE((name.length + 1) * 2, at + 0x40)
    directory[at + 0x42] = type
  }
  entry(0, 'Root Entry', 5)
  entry(1, '\x05SummaryInformation', 2)
  entry(2, stream, 2)
  return padded(Buffer.concat([header, Buffer.alloc(512), directory]), size)
}

/** Plain text, UTF-8, padded with more text. */
export const text = (size = 256) => padded(Buffer.from('Olá, segue o pedido nº 1042.\n'), size, 0x2e)

/** A WebP: `VP8 ` (lossy, static), or `VP8X` with the animation flag and an `ANIM` chunk. */
export function webp(animated: boolean, size = 1024): Buffer {
  const head = animated
    ? Buffer.concat([
        Buffer.from('RIFF\0\0\0\0WEBPVP8X', 'latin1'),
        Buffer.from([10, 0, 0, 0, 0x12, 0, 0, 0, 0xff, 0x01, 0, 0xff, 0x01, 0]),
        Buffer.from('ANIM\x06\0\0\0\0\0\0\0\0\0', 'latin1'),
      ])
    : Buffer.from('RIFF\0\0\0\0WEBPVP8 \0\0\0\0\x9d\x01\x2a', 'latin1')
  const file = padded(head, size)
  file.writeUInt32LE(file.length - 8, 4)
  return file
}
