import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..')
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-')

function anchorsOf(path: string): Set<string> {
  const text = readFileSync(path, 'utf8').replace(/```[\s\S]*?```/g, '')
  return new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => anchor(m[1] ?? '')))
}

it('every relative link in the README and docs/ names a page that exists, and a heading on it', () => {
  const broken: string[] = []
  for (const page of pages) {
    const text = readFileSync(join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '')
    for (const [, link = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(link)) continue
      const [path = '', hash] = link.split('#')
      const target = path ? join(root, dirname(page), path) : join(root, page)
      if (!existsSync(target)) broken.push(`${page}: ${link} (no such file)`)
      else if (hash && target.endsWith('.md') && !anchorsOf(target).has(hash)) {
        broken.push(`${page}: ${link} (no heading ${hash} in ${relative(root, target)})`)
      }
    }
  }
  expect(broken).toEqual([])
})
