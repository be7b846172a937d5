import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import axe from 'axe-core'
import { type Browser, chromium, type Page } from 'playwright-core'
import { expect } from 'vitest'

/**
 * What the console's browser tests share: Debian's Chromium (skipped with a reason when it is
 * missing), axe-core run in the page, a keyboard walk over every control, and screenshots kept
 * under .ci/out/console-screenshots (CI keeps .ci/out as artifacts).
 */

export const SCREENSHOTS = path.resolve(import.meta.dirname, '../../../../.ci/out/console-screenshots')

/** The Chromium to drive: CHROMIUM_PATH, else `chromium` or `chromium-browser` on the PATH. */
export function findChromium():
  | { path: string; missing?: undefined }
  | { path?: undefined; missing: string } {
  const given = process.env.CHROMIUM_PATH
  if (given) {
    return existsSync(given) ? { path: given } : { missing: `CHROMIUM_PATH=${given} does not exist` }
  }
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const found = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim()
      if (found) return { path: found }
    } catch {}
  }
  return {
    missing:
      'no Chromium: CHROMIUM_PATH is unset and neither `chromium` nor `chromium-browser` is on the PATH ' +
      '(run scripts/install-chromium.sh as root on Debian, or set CHROMIUM_PATH)',
  }
}

export const browserBinary = findChromium()

export async function launchBrowser(): Promise<Browser> {
  if (!browserBinary.path) throw new Error(browserBinary.missing)
  mkdirSync(SCREENSHOTS, { recursive: true })
  return chromium.launch({ executablePath: browserBinary.path, args: ['--no-sandbox'] })
}

/**
 * A fresh page (its own cookie jar) that records what the browser complains about: errors thrown
 * in the page and console errors other than the HTTP answers the page expects (a 401 before
 * sign-in). A CSP violation is such an error.
 */
export async function openPage(browser: Browser): Promise<{ page: Page; complaints: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  const complaints: string[] = []
  page.on('pageerror', (error) => complaints.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      complaints.push(`console: ${message.text()}`)
    }
  })
  return { page, complaints }
}

// The functions below run in the page: written as source text, since this package's types know
// no DOM.

/** axe-core in the page: no serious or critical violation. */
export async function expectAccessible(page: Page, what: string) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axe.source)
  const result = (await page.evaluate(
    "window.axe.run(document, { resultTypes: ['violations'] })",
  )) as axe.AxeResults
  const serious = result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.slice(0, 3).map((node) => node.target.join(' ')),
    }))
  expect(serious, `${what}: axe violations`).toEqual([])
}

/** Marks every enabled, visible control with `data-kb`, blurs the focus, and counts them. */
const MARK_CONTROLS = `(() => {
  const controls = [...document.querySelectorAll('a[href], button, input, select, textarea')]
    .filter((element) => !element.disabled && element.getClientRects().length > 0)
  controls.forEach((element, index) => { element.dataset.kb = String(index) })
  document.activeElement?.blur()
  return controls.length
})()`
const FOCUSED_MARK = 'document.activeElement?.dataset?.kb ?? null'
const UNREACHED = (seen: string[]) => `[...document.querySelectorAll('[data-kb]')]
  .filter((element) => !${JSON.stringify(seen)}.includes(element.dataset.kb))
  .map((element) => element.outerHTML.slice(0, 120))`

/**
 * Every enabled control on the page (link, button, field) takes the focus by Tab alone, in a walk
 * from the top of the page.
 */
export async function expectKeyboardReachable(page: Page, what: string) {
  const count = (await page.evaluate(MARK_CONTROLS)) as number
  const reached = new Set<string>()
  // Twice round at most: the walk starts wherever the focus last was, and wraps.
  for (let i = 0; i < 2 * count + 10 && reached.size < count; i++) {
    await page.keyboard.press('Tab')
    const index = (await page.evaluate(FOCUSED_MARK)) as string | null
    if (index !== null) reached.add(index)
  }
  const missed = await page.evaluate(UNREACHED([...reached]))
  expect(missed, `${what}: controls the keyboard does not reach`).toEqual([])
}

/** The checks every page gets: axe, the keyboard walk, and a screenshot. */
export async function checkPage(page: Page, name: string) {
  await expectAccessible(page, name)
  await expectKeyboardReachable(page, name)
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

/** `expect.poll` with time for a loaded machine (its default is one second). */
export const poll = <T>(read: () => T | Promise<T>, timeout = 15_000) => expect.poll(read, { timeout })

/**
 * The text a person reads under `selector` (headings, paragraphs, list items, table cells) whose
 * boxes overlap another's, as `a / b` pairs: each box cut to what the scrolling or clipping boxes
 * around it show, an element and one inside it never compared.
 */
const OVERLAPPING_TEXT = (selector: string) => `(() => {
  const root = document.querySelector(${JSON.stringify(selector)})
  if (!root) return ['nothing matches ' + ${JSON.stringify(selector)}]
  const shown = (element) => {
    const r = element.getBoundingClientRect()
    const box = { left: r.left, top: r.top, right: r.right, bottom: r.bottom }
    for (let up = element.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up)
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue
      const clip = up.getBoundingClientRect()
      box.left = Math.max(box.left, clip.left)
      box.top = Math.max(box.top, clip.top)
      box.right = Math.min(box.right, clip.right)
      box.bottom = Math.min(box.bottom, clip.bottom)
    }
    return box
  }
  const name = (element) => element.tagName.toLowerCase() + ' "' + element.textContent.trim().slice(0, 40) + '"'
  const texts = [...root.querySelectorAll('h2, h3, p, li, th, td')]
    .filter((element) => element.getClientRects().length > 0 && !element.closest('.visually-hidden'))
    .map((element) => ({ element, box: shown(element) }))
    .filter(({ box }) => box.right - box.left > 1 && box.bottom - box.top > 1)
  const overlaps = []
  for (const [at, a] of texts.entries()) {
    for (const b of texts.slice(at + 1)) {
      if (a.element.contains(b.element) || b.element.contains(a.element)) continue
      const wide = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left)
      const high = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top)
      if (wide > 1 && high > 1) overlaps.push(name(a.element) + ' / ' + name(b.element))
    }
  }
  return overlaps
})()`

/** No text under `selector` is drawn over other text (a wide table spilling over the next cell). */
export async function expectNoOverlappingText(page: Page, selector: string, what: string) {
  expect(await page.evaluate(OVERLAPPING_TEXT(selector)), `${what}: text drawn over other text`).toEqual([])
}
