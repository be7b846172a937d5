/**
 * The walkthroughs, read from the docs themselves: every ```sh / ```bash block of the walkthrough
 * pages, cut into commands as bash reads them, each with what its `# →` comment promises and the
 * placeholders (`KEY=mdk_dev_…`) it leaves to the reader. The convention is the README's
 * "Walkthroughs in the docs" section (contributor notes).
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Promised, parsePromise } from './promise.ts'

/**
 * The pages with a walkthrough, in the order a reader meets them (the README's, then its links').
 * A page here has every shell block run, except those marked `<!-- not a walkthrough: … -->`.
 */
export const WALKTHROUGH_PAGES = [
  'README.md',
  'docs/messaging.md',
  'docs/templates.md',
  'docs/consent.md',
  'docs/webhooks.md',
  'docs/message-kinds.md',
  'docs/orders.md',
  'docs/campaigns.md',
  'docs/senders.md',
  'docs/sender-pools.md',
  'docs/fallback.md',
] as const

/**
 * Pages whose shell blocks promise answers (`# →`) but hold no walkthrough the runner can play, and
 * why. A page with promises is in one list or the other (the test checks).
 */
export const NOT_WALKTHROUGHS: Record<string, string> = {
  'docs/campaigns-audience.md': "one call, on a december.csv of the reader's own",
  'docs/data-lifecycle.md': "single calls, shown beside the prose, on ids of the reader's own",
  'docs/media.md': "one upload of a photo.png of the reader's own",
  'docs/operations.md': "single calls of an incident runbook, on an incident's dates",
  'docs/statuses.md': "one list call, on a week of the reader's own messages",
}

/** The pages of the repository at `root` with a shell block that promises an answer. */
export function pagesWithPromises(root: string): string[] {
  const pages = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ]
  return pages.filter((page) => {
    const markdown = readFileSync(join(root, page), 'utf8')
    const blocks = markdown.split(/^```(?:sh|bash)\s*$/m).slice(1)
    return blocks.some((block) => /(^|\s)#\s*→/m.test(block.split(/^```\s*$/m)[0] ?? ''))
  })
}

/** A value the reader copies from an earlier answer, or a key the page asks them to have. */
export interface Placeholder {
  name: string
  /** As written: `mdk_dev_…`, `…`. What comes before the `…` starts the value. */
  written: string
  /** The answer's field it is taken from, when the comment names one (`# the key from the answer`). */
  field?: string
  /** `# a key with send:free-text and read:messages`: the runner gets such a key, as the README does. */
  keyWithScopes?: string[]
}

export interface Step {
  page: string
  /** The line of the page where the command starts. */
  line: number
  /** The command as written, continuation lines included. */
  command: string
  promised?: Promised
  /** When the command only sets variables, some of them placeholders: each assignment, in order. */
  assignments?: { name: string; value: string; placeholder?: Placeholder }[]
}

export interface Walkthrough {
  page: string
  steps: Step[]
}

const SKIP = /^<!--\s*not a walkthrough\b/

/** Whether bash reads `text` as whole commands (no open quote, `\`, `for … done`, `{ … }`). */
function complete(text: string): boolean {
  if (/\\$/.test(text)) return false // bash takes a `\` at the very end as the end
  return spawnSync('bash', ['-n'], { input: `${text}\n`, stdio: ['pipe', 'ignore', 'ignore'] }).status === 0
}

/** The `# →` comment on a command's last line, outside quotes, if any. */
function trailingPromise(line: string): string | undefined {
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const char = line[i]
    if (quote) {
      if (char === '\\' && quote === '"') i++
      else if (char === quote) quote = undefined
    } else if (char === "'" || char === '"') quote = char
    else if (char === '\\') i++
    else if (char === '#' && /^#\s*→/.test(line.slice(i)) && (i === 0 || /\s/.test(line[i - 1] ?? ''))) {
      return line.slice(i).replace(/^#\s*→\s?/, '')
    }
  }
  return undefined
}

const ASSIGNMENT = /([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|"[^"]*"|[^\s;'"]*)/y
const SCOPE = /\b[a-z]+:[a-z-]+\b/g

/** A line that only sets variables (`API=…; KEY=mdk_dev_…   # the key from the answer`), read. */
function readAssignments(command: string): Step['assignments'] {
  if (command.includes('\n')) return undefined
  const comment = /\s#\s(.*)$/.exec(command)?.[1] ?? ''
  const code = comment ? command.slice(0, command.length - comment.length).replace(/\s*#\s$/, '') : command
  const assignments: NonNullable<Step['assignments']> = []
  let at = code.search(/\S/)
  while (at >= 0 && at < code.length) {
    ASSIGNMENT.lastIndex = at
    const match = ASSIGNMENT.exec(code)
    if (!match) return undefined
    assignments.push({ name: match[1] as string, value: match[2] as string })
    at = ASSIGNMENT.lastIndex
    const separator = /^\s*;?\s*/.exec(code.slice(at))?.[0] ?? ''
    at += separator.length
    if (!separator.includes(';') && at < code.length && code.slice(at).trim()) return undefined
  }
  const placeholders = assignments.filter((a) => a.value.includes('…'))
  if (placeholders.length === 0) return undefined
  const keyWith = /\ba key with\b(.*)/.exec(comment)
  const field =
    /\b(?:the|its)\s+`?([\w.[\]]+)`?(?:\s+(?:from|in|of)\s+the\s+answer)?/.exec(comment)?.[1] ?? undefined
  for (const assignment of placeholders) {
    assignment.placeholder = {
      name: assignment.name,
      written: assignment.value.replace(/^'(.*)'$/, '$1'),
      ...(keyWith ? { keyWithScopes: keyWith[1]?.match(SCOPE) ?? [] } : {}),
      ...(field && placeholders.length === 1 && !keyWith ? { field } : {}),
    }
  }
  return assignments
}

/** A page's shell blocks cut into steps; throws naming the line when the page breaks the convention. */
export function readWalkthrough(page: string, markdown: string): Walkthrough {
  const lines = markdown.split('\n')
  const steps: Step[] = []
  const fail = (line: number, what: string): never => {
    throw new Error(`${page}:${line}: ${what}`)
  }
  let previous = ''
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(sh|bash)\s*$/.exec(lines[i] ?? '')
    if (!fence) {
      if ((lines[i] ?? '').trim()) previous = (lines[i] ?? '').trim()
      continue
    }
    const skipped = SKIP.test(previous)
    const body: { text: string; line: number }[] = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++)
      body.push({ text: lines[i] ?? '', line: i + 1 })
    previous = ''
    if (skipped) continue

    let pending: { text: string; line: number }[] = []
    let last: Step | undefined
    let promise: { step: Step; text: string } | undefined
    /** A promise written in a step's comment above its command (`# 3. Start it. → 200 {…}`). */
    let ahead: { text: string; line: number } | undefined
    /** Whether the lines since the last command are only its promise (no blank line, no prose). */
    let underCommand = false
    const closePromise = () => {
      if (!promise) return
      try {
        promise.step.promised = parsePromise(promise.text)
      } catch (error) {
        fail(promise.step.line, (error as Error).message)
      }
      promise = undefined
    }
    for (const { text, line } of body) {
      if (pending.length === 0) {
        const trimmed = text.trim()
        if (!trimmed) {
          closePromise()
          underCommand = false
          continue
        }
        if (trimmed.startsWith('#')) {
          const arrow = /^#\s*→\s?(.*)$/.exec(trimmed)
          const inProse = /\s→\s(.*)$/.exec(trimmed)
          if (arrow && underCommand) {
            closePromise()
            if (!last || last.promised) fail(line, 'a second promise for one command')
            else promise = { step: last, text: arrow[1] ?? '' }
          } else if (promise && /^#\s{2,}\S/.test(trimmed)) {
            promise.text += ` ${trimmed.replace(/^#\s+/, '')}`
          } else if (ahead && /^#\s{2,}\S/.test(trimmed)) {
            ahead.text += ` ${trimmed.replace(/^#\s+/, '')}`
          } else if (arrow || inProse) {
            closePromise()
            underCommand = false
            if (ahead) fail(line, 'two promises before one command')
            ahead = { text: (arrow?.[1] ?? inProse?.[1] ?? '').trim(), line }
          } else {
            closePromise()
            underCommand = false
          }
          continue
        }
      }
      const inline = /(^|[\s/="])<[a-zA-Z][^<>\n]*>/.exec(text.replace(/\s#.*$/, ''))
      if (inline) {
        fail(
          line,
          `"${inline[0].trim()}" in a command: write a placeholder line (NAME=…   # the id from the answer)`,
        )
      }
      pending.push({ text, line })
      const command = pending.map((p) => p.text).join('\n')
      if (!complete(command)) continue
      closePromise()
      const step: Step = { page, line: pending[0]?.line ?? line, command }
      pending = []
      const assignments = readAssignments(command)
      if (assignments) step.assignments = assignments
      const trailing = trailingPromise(command.split('\n').at(-1) ?? '')
      if (trailing !== undefined && ahead)
        fail(step.line, 'a promise above the command and another beside it')
      if (trailing !== undefined) promise = { step, text: trailing }
      else if (ahead) promise = { step, text: ahead.text }
      ahead = undefined
      steps.push(step)
      last = step
      underCommand = true
    }
    closePromise()
    if (ahead) fail(ahead.line, 'a promise (→) with no command under it')
    if (pending.length) fail(pending[0]?.line ?? 0, 'a command that never ends (an open quote or `\\`?)')
  }
  return { page, steps }
}

/** Every walkthrough page of the repository at `root`, read. */
export const readWalkthroughs = (root: string): Walkthrough[] =>
  WALKTHROUGH_PAGES.map((page) => readWalkthrough(page, readFileSync(join(root, page), 'utf8')))
