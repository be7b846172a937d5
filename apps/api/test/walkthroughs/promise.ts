/**
 * What a walkthrough's `# →` comment promises, and whether an answer keeps it.
 *
 *   # → 202                                      the HTTP status of the command's (last) curl
 *   # → 200 {"status":"sent","attempts":1,…}     and a JSON fragment the answer's body matches
 *   # → 403 API_KEY_NOT_ACTIVE (pending)         or text the output holds; "(…)" is a remark
 *   # → receipt.jpg: JPEG image data …           (no status: the output of any command)
 *
 * In a fragment, `…` stands for anything: a value (`"id":"…"`), the rest of a string
 * (`"wamid.…"`), more members of an object or elements of an array. An object matches an answer that
 * has at least its members; an array, one that has its elements in that order (others between).
 */

export type Pattern =
  | { kind: 'any' }
  | { kind: 'string'; glob: string }
  | { kind: 'literal'; value: number | boolean | null }
  | { kind: 'object'; members: [string, Pattern][] }
  | { kind: 'array'; elements: Pattern[] }

export interface Promised {
  /** The promise as the docs write it. */
  text: string
  status?: number
  json?: Pattern
  /** Text the output holds, `…` standing for anything. */
  contains?: string
}

const ELLIPSIS = '…'

/** Reads a promise (the text after `→`, continuation lines joined). */
export function parsePromise(text: string): Promised {
  const promised: Promised = { text: text.trim() }
  let rest = promised.text
  const status = /^(\d{3})\b\s*/.exec(rest)
  if (status) {
    promised.status = Number(status[1])
    rest = rest.slice(status[0].length)
  }
  if (rest.startsWith('{') || rest.startsWith('[')) {
    const parser = new PatternParser(rest)
    promised.json = parser.value()
    const after = rest.slice(parser.at).trim()
    if (after && !/^\(.*\)$/.test(after)) {
      throw new Error(
        `after the JSON of "→ ${promised.text}" only a remark in (…) may follow, not "${after}"`,
      )
    }
    return promised
  }
  // A remark in parentheses says what the reader sees or why; it is not looked for in the output.
  const text2 = rest.replace(/\s*\([^()]*\)\s*$/, '').trim()
  if (text2) promised.contains = text2
  return promised
}

class PatternParser {
  at = 0
  private readonly text: string
  constructor(text: string) {
    this.text = text
  }

  private fail(what: string): never {
    throw new Error(`cannot read the promised JSON at "${this.text.slice(this.at, this.at + 30)}": ${what}`)
  }
  private space() {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++
  }
  private eat(char: string): boolean {
    this.space()
    if (this.text[this.at] === char) {
      this.at++
      return true
    }
    return false
  }

  value(): Pattern {
    this.space()
    const char = this.text[this.at]
    if (char === ELLIPSIS) {
      this.at++
      return { kind: 'any' }
    }
    if (char === '{') return this.object()
    if (char === '[') return this.array()
    if (char === '"') {
      const glob = this.string()
      return glob === ELLIPSIS ? { kind: 'any' } : { kind: 'string', glob }
    }
    const literal = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(this.text.slice(this.at))
    if (!literal) this.fail('a value was expected')
    this.at += literal[0].length
    return { kind: 'literal', value: JSON.parse(literal[0]) as number | boolean | null }
  }

  private string(): string {
    const start = this.at
    this.at++
    while (this.at < this.text.length && this.text[this.at] !== '"') {
      if (this.text[this.at] === '\\') this.at++
      this.at++
    }
    if (this.text[this.at] !== '"') this.fail('an unclosed string')
    this.at++
    return JSON.parse(this.text.slice(start, this.at)) as string
  }

  private object(): Pattern {
    this.at++
    const members: [string, Pattern][] = []
    if (this.eat('}')) return { kind: 'object', members }
    do {
      this.space()
      if (this.text[this.at] === ELLIPSIS) {
        this.at++
        continue
      }
      if (this.text[this.at] !== '"') this.fail('a member name was expected')
      const name = this.string()
      if (!this.eat(':')) this.fail('":" was expected')
      members.push([name, this.value()])
    } while (this.eat(','))
    if (!this.eat('}')) this.fail('"}" was expected')
    return { kind: 'object', members }
  }

  private array(): Pattern {
    this.at++
    const elements: Pattern[] = []
    if (this.eat(']')) return { kind: 'array', elements }
    do {
      this.space()
      if (this.text[this.at] === ELLIPSIS) {
        this.at++
        continue
      }
      elements.push(this.value())
    } while (this.eat(','))
    if (!this.eat(']')) this.fail('"]" was expected')
    return { kind: 'array', elements }
  }
}

const globRegExp = (glob: string, whole: boolean) => {
  const body = glob
    .split(ELLIPSIS)
    // "data …": the space before an ellipsis is the writer's, not the answer's ("data, JFIF…").
    .map((part, i, parts) => (i < parts.length - 1 ? part.trimEnd() : part))
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*')
  return new RegExp(whole ? `^${body}$` : body)
}

/** Where `actual` differs from `pattern` (a path and what differs), or undefined when it matches. */
export function mismatch(pattern: Pattern, actual: unknown, path = ''): string | undefined {
  const at = path || '(the answer)'
  switch (pattern.kind) {
    case 'any':
      return actual === undefined ? `${at}: missing` : undefined
    case 'literal':
      return actual === pattern.value
        ? undefined
        : `${at}: promised ${JSON.stringify(pattern.value)}, got ${JSON.stringify(actual)}`
    case 'string': {
      const shown = typeof actual === 'number' ? String(actual) : actual
      return typeof shown === 'string' && globRegExp(pattern.glob, true).test(shown)
        ? undefined
        : `${at}: promised ${JSON.stringify(pattern.glob)}, got ${JSON.stringify(actual)}`
    }
    case 'object': {
      if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) {
        return `${at}: promised an object, got ${JSON.stringify(actual)}`
      }
      for (const [name, value] of pattern.members) {
        const difference = mismatch(value, (actual as Record<string, unknown>)[name], `${path}.${name}`)
        if (difference) return difference
      }
      return undefined
    }
    case 'array': {
      if (!Array.isArray(actual)) return `${at}: promised an array, got ${JSON.stringify(actual)}`
      let from = 0
      for (const [index, element] of pattern.elements.entries()) {
        let first: string | undefined
        let found = -1
        for (let i = from; i < actual.length; i++) {
          const difference = mismatch(element, actual[i], `${path}[${i}]`)
          if (!difference) {
            found = i
            break
          }
          first ??= difference
        }
        if (found < 0) {
          return first ?? `${path}[${index}]: promised an element, the array has ${actual.length - from} left`
        }
        from = found + 1
      }
      return undefined
    }
  }
}

export interface Answer {
  /** The status of the command's last curl, if it ran one. */
  status?: number
  output: string
}

/** Whether an answer keeps a promise: undefined when it does, else what differs. */
export function broken(promised: Promised, answer: Answer): string | undefined {
  if (promised.status !== undefined && answer.status !== promised.status) {
    return `status: promised ${promised.status}, got ${answer.status ?? 'no HTTP answer'}`
  }
  if (promised.json) {
    let body: unknown
    try {
      body = JSON.parse(answer.output)
    } catch {
      return `promised JSON, got ${JSON.stringify(answer.output.slice(0, 300))}`
    }
    return mismatch(promised.json, body)
  }
  if (promised.contains && !globRegExp(promised.contains, false).test(answer.output)) {
    return `promised output holding ${JSON.stringify(promised.contains)}`
  }
  return undefined
}

/** A value at a path (`key`, `content.media.id`, `data[0].id`), or undefined. */
export function valueAt(value: unknown, path: string): unknown {
  let current = value
  for (const part of path.split(/\.|(?=\[)/)) {
    if (current === null || typeof current !== 'object') return undefined
    const index = /^\[(\d+)\]$/.exec(part)
    current = index ? (current as unknown[])[Number(index[1])] : (current as Record<string, unknown>)[part]
  }
  return current
}
