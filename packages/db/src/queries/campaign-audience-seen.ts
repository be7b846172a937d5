/**
 * The recipients an upload has taken so far, each with its first line: a later row of one of them
 * is a duplicate, judged as it is read (a window over the campaign's rows in SQL, after the COPY,
 * cost as much as the COPY itself). A phone (E.164: a non-zero digit, then at most 14 more) is its
 * digits as a number, exact in a double, kept in an open-addressed table of typed arrays: 12 bytes
 * a slot, at most half full (a million phones, 24 MB), nothing for the collector to walk. User ids
 * are few: a Map.
 */
export class SeenRecipients {
  #keys = new Float64Array(1 << 16)
  #lines = new Int32Array(1 << 16)
  #size = 0
  #userIds = new Map<string, number>()

  /** The first line of `phone` (E.164, checked) if it was taken before; else records it at `line`. */
  phone(phone: string, line: number): number | undefined {
    let key = 0
    for (let i = 1; i < phone.length; i++) key = key * 10 + phone.charCodeAt(i) - 48
    return this.phoneKey(key, line)
  }

  /** As `phone`, for a phone already turned into its key (its digits as a number). */
  phoneKey(key: number, line: number): number | undefined {
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow()
    const at = this.#slot(this.#keys, key)
    if (this.#keys[at] === key) return this.#lines[at]
    this.#keys[at] = key
    this.#lines[at] = line
    this.#size++
    return undefined
  }

  /** The first line of `userId` if it was taken before; else records it at `line`. */
  userId(userId: string, line: number): number | undefined {
    const first = this.#userIds.get(userId)
    if (first === undefined) this.#userIds.set(userId, line)
    return first
  }

  /** Where `key` is in `keys`, or the empty slot it would take (linear probing; 0 is empty). */
  #slot(keys: Float64Array, key: number): number {
    const mask = keys.length - 1
    const high = Math.floor(key / 4294967296)
    let at = (Math.imul(key >>> 0, 0x9e3779b1) ^ Math.imul(high, 0x85ebca6b)) & mask
    for (;;) {
      const k = keys[at] as number
      if (k === key || k === 0) return at
      at = (at + 1) & mask
    }
  }

  #grow() {
    const keys = this.#keys
    const lines = this.#lines
    this.#keys = new Float64Array(keys.length * 2)
    this.#lines = new Int32Array(keys.length * 2)
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as number
      if (key === 0) continue
      const at = this.#slot(this.#keys, key)
      this.#keys[at] = key
      this.#lines[at] = lines[i] as number
    }
  }
}
