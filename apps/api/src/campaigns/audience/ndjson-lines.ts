import { CAMPAIGN_AUDIENCE_MAX_LINE_CHARS, CAMPAIGN_AUDIENCE_RAW_CHARS } from '@dispatch/contracts'
import { detached } from './detached.ts'

/** An NDJSON line as read: its text, or why it was given up (too long). */
export interface NdjsonLine {
  line: number
  text: string
  tooLong?: boolean
}

/**
 * A streaming splitter of NDJSON into lines (`\n`, a `\r` before it dropped); blank lines are
 * counted, not given. A line longer than CAMPAIGN_AUDIENCE_MAX_LINE_CHARS is given as too long
 * (its start only) and the rest of it dropped unread.
 */
export class NdjsonLines {
  #text = ''
  #line = 0
  #skipping = false

  push(chunk: string, final = false): NdjsonLine[] {
    const lines: NdjsonLine[] = []
    let text = this.#text + chunk
    let pos = 0
    if (this.#skipping) {
      const nl = text.indexOf('\n')
      if (nl === -1) {
        this.#text = ''
        return lines
      }
      this.#skipping = false
      pos = nl + 1
    }
    while (pos < text.length) {
      let end = text.indexOf('\n', pos)
      if (end === -1) {
        if (!final) break
        end = text.length
      }
      const last = end > pos && text.charCodeAt(end - 1) === 13 ? end - 1 : end
      this.#line++
      if (last > pos) lines.push({ line: this.#line, text: text.slice(pos, last) })
      pos = end + 1
    }
    text = text.slice(pos)
    if (text.length > CAMPAIGN_AUDIENCE_MAX_LINE_CHARS) {
      this.#line++
      lines.push({ line: this.#line, text: text.slice(0, CAMPAIGN_AUDIENCE_RAW_CHARS), tooLong: true })
      this.#skipping = true
      text = ''
    }
    this.#text = detached(text)
    return lines
  }
}
