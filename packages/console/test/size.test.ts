import { readFileSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { DIST } from '../scripts/ensure-built.ts'

/** The budget for the first page's JavaScript, compressed. */
const BUDGET_BYTES = 250 * 1024
const BASE = '/console/'

const html = () => readFileSync(path.join(DIST, 'index.html'), 'utf8')
const assetFile = (url: string) => {
  expect(url.startsWith(BASE), `${url} is under ${BASE}`).toBe(true)
  return path.join(DIST, url.slice(BASE.length))
}

/** The scripts the page loads before it shows anything: its module entries and their preloads. */
function eagerScripts(page: string): string[] {
  const scripts = [...page.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1] ?? '')
  const preloads = [...page.matchAll(/<link\b[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map(
    (m) => m[1] ?? '',
  )
  return [...scripts, ...preloads]
}

describe('the built console', () => {
  it('loads at most 250 KB of gzipped JavaScript on its first page', () => {
    const scripts = eagerScripts(html())
    expect(scripts.length).toBeGreaterThan(0)
    const sizes = scripts.map((url) => ({
      url,
      gzip: gzipSync(readFileSync(assetFile(url)), { level: 9 }).length,
    }))
    const total = sizes.reduce((sum, s) => sum + s.gzip, 0)
    console.info(`console first load: ${(total / 1024).toFixed(1)} KB gzipped`, sizes)
    expect(total).toBeLessThanOrEqual(BUDGET_BYTES)
  })

  it('is a production build: no source paths or JSX debugging in what a browser loads', () => {
    for (const url of eagerScripts(html())) {
      const script = readFileSync(assetFile(url), 'utf8')
      expect(script).not.toContain('/packages/console/src/')
      expect(script).not.toMatch(/lineNumber:\d+,columnNumber/)
    }
  })

  it('keeps the chart library out of the first load (the overview loads it when it draws)', () => {
    for (const url of eagerScripts(html())) {
      expect(readFileSync(assetFile(url), 'utf8')).not.toContain('uPlot')
    }
  })

  it('has nothing inline, so the CSP (script-src and style-src self) lets every part of the page run', () => {
    const page = html()
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(page).not.toMatch(/<style\b/)
    expect(page).not.toMatch(/\sstyle="/)
    expect(page).not.toMatch(/\son[a-z]+="/)
  })
})
