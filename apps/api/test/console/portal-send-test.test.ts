import { randomBytes } from 'node:crypto'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, newPhone, syncedSender } from '../templates/setup.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * The portal's send-a-test in real Chromium: it offers each kind the key's scopes allow, a template
 * picker over the sender's approved templates with a field per variable and a preview filled as
 * they are typed, and answers each send with the message's timeline, followed live until it
 * settles (and not asked again once the API answered 404). A key without a send scope is told what
 * to ask for. Every page checked with axe-core and walked with the keyboard.
 */

if (browserBinary.missing)
  console.warn(`portal send-a-test: the browser tests are skipped: ${browserBinary.missing}`)

const SECRETS_KEY = randomBytes(32).toString('base64')
const SCOPES = [
  'send:free-text',
  'send:template',
  'send:image',
  'send:document',
  'send:video',
  'send:audio',
  'send:sticker',
  'send:location',
  'send:contacts',
  'send:interactive',
  'send:reaction',
  'read:messages',
]

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let key: { id: string; key: string }

describe.skipIf(browserBinary.missing)('the portal’s send-a-test, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    fake = await startFakeWhatsApp()
    const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
    app = await buildTestApp(world, { ...env, MESSAGE_RATE_PER_SECOND: '10000' })
    worker = await startTestWorker(world, {
      ...env,
      WHATSAPP_ACCESS_TOKEN: 'default-token',
      WHATSAPP_PHONE_NUMBER_ID: '106540352242931',
      ADMISSION_INTERVAL_MS: '20',
      TEMPLATE_SYNC_INTERVAL_MS: '0',
    })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    const sender = await syncedSender(app, fake)
    key = await keyOf(app, sender.id, SCOPES)
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
    await signIn(page, key.key)
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await fake?.close()
    await world?.close()
  })

  async function signIn(target: Page, apiKey: string) {
    await target.goto(`${baseUrl}/portal`)
    await target.getByLabel('API key').fill(apiKey)
    await target.getByLabel('API key').press('Enter')
    await target.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await target.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Send a test' }).click()
    await target.getByRole('heading', { level: 1, name: 'Send a test message' }).waitFor()
  }
  const form = () => page.getByRole('form', { name: 'Send a test message' })
  const answer = () => page.getByRole('region', { name: 'Your test message' })
  /** Sends the form, and follows the answer's timeline to `sent`; the platform got this body. */
  async function sendAndFollow(phone: string) {
    await form().getByRole('button', { name: 'Send', exact: true }).click()
    await poll(() => page.getByRole('status').filter({ hasText: 'Accepted: message' }).count()).toBe(1)
    await poll(() => answer().locator('.facts .badge').textContent(), 20_000).toBe('sent')
    expect(await answer().getByRole('list', { name: 'Timeline' }).textContent()).toMatch(/accepted.*sent/is)
    const sent = await waitFor(
      () => fake.requests.find((r) => r.body.to === phone.slice(1) && r.platformMessageId),
      { what: `the platform's send to ${phone}` },
    )
    return sent.body
  }

  it('offers the kinds the key may send, and only those', async () => {
    const kinds = await form().getByLabel('Kind of message').locator('option').allTextContents()
    expect(kinds).toEqual([
      'Text',
      'Template',
      'Image',
      'Document',
      'Video',
      'Audio',
      'Sticker',
      'Location',
      'Contact card',
      'Reply buttons (interactive)',
      'Reaction',
    ])
    await checkPage(page, 'portal-send-text')
  })

  it('sends a template picked from the sender’s approved ones, previewed as its variables are typed', async () => {
    await form().getByLabel('Kind of message').selectOption('template')
    const picker = form().getByLabel('Template', { exact: true })
    await picker.locator('option').nth(1).waitFor({ state: 'attached' })
    const offered = await picker.locator('option').allTextContents()
    expect(offered).toContain('appointment_reminder (en_US, utility)')
    expect(offered).toContain('order_shipped (pt_BR, utility)')
    await picker.selectOption({ label: 'appointment_reminder (en_US, utility)' })
    const preview = form().getByRole('region', { name: 'Preview' })
    // Each variable missing stands out, named, until it is given.
    await poll(() => preview.textContent()).toContain('Hi {{first_name}}, see you on {{date}}.')
    await form().getByLabel('Variable {{first_name}}').fill('Ana')
    await poll(() => preview.textContent()).toContain('Hi Ana, see you on {{date}}.')
    await form().getByLabel('Variable {{date}}').fill('Tuesday')
    await poll(() => preview.textContent()).toContain('Hi Ana, see you on Tuesday.')
    expect(await preview.textContent()).toContain('Reply STOP to opt out')
    const phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await checkPage(page, 'portal-send-template')
    const body = await sendAndFollow(phone)
    expect(body).toMatchObject({ type: 'template', template: { name: 'appointment_reminder' } })
    expect(JSON.stringify(body)).toContain('Tuesday')
    await checkPage(page, 'portal-send-template-sent')
  })

  it('sends a location and reply buttons, each followed on its timeline', async () => {
    await form().getByLabel('Kind of message').selectOption('location')
    const there = newPhone()
    await form().getByLabel('Phone (international format)').fill(there)
    await form().getByLabel('Latitude').fill('-23.5614')
    await form().getByLabel('Longitude').fill('-46.6559')
    await form().getByLabel('Place name (optional)').fill('Bistro Centro')
    await checkPage(page, 'portal-send-location')
    expect(await sendAndFollow(there)).toMatchObject({
      type: 'location',
      location: { latitude: -23.5614, longitude: -46.6559, name: 'Bistro Centro' },
    })

    await form().getByLabel('Kind of message').selectOption('interactive')
    const asked = newPhone()
    await form().getByLabel('Phone (international format)').fill(asked)
    await form().getByLabel('Message', { exact: true }).fill('Table for two at 8?')
    await form().getByLabel('Button 1').fill('Yes')
    await form().getByLabel('Button 2 (optional)').fill('No')
    const body = await sendAndFollow(asked)
    expect(body).toMatchObject({
      type: 'interactive',
      interactive: { type: 'button', body: { text: 'Table for two at 8?' } },
    })
    expect(JSON.stringify(body)).toContain('"title":"No"')
  })

  it('sends each media kind, by media id or https link, with its caption and file name', async () => {
    const media = (kind: string) => form().getByLabel(new RegExp(`^The ${kind}: a media id`))
    const caption = () => form().getByLabel('Caption (optional)')

    await form().getByLabel('Kind of message').selectOption('image')
    let phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await media('image').fill('https://cdn.example.com/receipt.jpg')
    await caption().fill('Your receipt')
    await checkPage(page, 'portal-send-image')
    expect(await sendAndFollow(phone)).toMatchObject({
      type: 'image',
      image: { link: 'https://cdn.example.com/receipt.jpg', caption: 'Your receipt' },
    })

    await form().getByLabel('Kind of message').selectOption('document')
    phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await media('document').fill('1234567890123456')
    await form().getByLabel('File name shown (optional)').fill('invoice-1042.pdf')
    await caption().fill('Your invoice')
    expect(await sendAndFollow(phone)).toMatchObject({
      type: 'document',
      document: { id: '1234567890123456', filename: 'invoice-1042.pdf', caption: 'Your invoice' },
    })

    await form().getByLabel('Kind of message').selectOption('video')
    phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await media('video').fill('https://cdn.example.com/welcome.mp4')
    await caption().fill('Welcome')
    expect(await sendAndFollow(phone)).toMatchObject({
      type: 'video',
      video: { link: 'https://cdn.example.com/welcome.mp4', caption: 'Welcome' },
    })

    // Audio and stickers have no caption field: the file alone.
    await form().getByLabel('Kind of message').selectOption('audio')
    expect(await caption().count()).toBe(0)
    phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await media('audio').fill('2234567890123456')
    expect(await sendAndFollow(phone)).toMatchObject({ type: 'audio', audio: { id: '2234567890123456' } })

    await form().getByLabel('Kind of message').selectOption('sticker')
    phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await media('sticker').fill('https://cdn.example.com/thanks.webp')
    await checkPage(page, 'portal-send-sticker')
    expect(await sendAndFollow(phone)).toMatchObject({
      type: 'sticker',
      sticker: { link: 'https://cdn.example.com/thanks.webp' },
    })
  })

  it('sends a contact card, and a reaction to a message', async () => {
    await form().getByLabel('Kind of message').selectOption('contacts')
    const phone = newPhone()
    await form().getByLabel('Phone (international format)').fill(phone)
    await form().getByLabel("Contact's first name").fill('Bia')
    await form().getByLabel("Contact's last name (optional)").fill('Souza')
    await form().getByLabel("Contact's phone").fill('+5511987650042')
    await checkPage(page, 'portal-send-contacts')
    const card = await sendAndFollow(phone)
    expect(card).toMatchObject({
      type: 'contacts',
      contacts: [
        {
          name: { formatted_name: 'Bia Souza', first_name: 'Bia', last_name: 'Souza' },
          phones: [{ phone: '+5511987650042', type: 'CELL' }],
        },
      ],
    })

    // A reaction to the card just sent, named by its Dispatch id: the platform gets its wamid.
    const cardId = (await answer().locator('.facts code.id').first().textContent()) ?? ''
    const wamid = fake.requests.find((r) => r.messageId === cardId)?.platformMessageId
    expect(wamid).toMatch(/^wamid\./)
    await form().getByLabel('Kind of message').selectOption('reaction')
    await form().getByLabel('Phone (international format)').fill(phone)
    await form().getByLabel('React to (a message id, or its wamid)').fill(cardId)
    await form().getByLabel('Emoji').fill('👍')
    await checkPage(page, 'portal-send-reaction')
    await form().getByRole('button', { name: 'Send', exact: true }).click()
    await poll(() => answer().locator('.facts .badge').textContent(), 20_000).toBe('sent')
    const reaction = await waitFor(
      () => fake.requests.find((r) => r.body.to === phone.slice(1) && r.body.type === 'reaction'),
      { what: 'the platform’s reaction' },
    )
    expect(reaction.body).toMatchObject({ type: 'reaction', reaction: { message_id: wamid, emoji: '👍' } })
  })

  it('stops following a message the API answers 404 for', async () => {
    let reads = 0
    await page.route('**/api/third-party/messages/*/timeline', (route) => {
      reads++
      return route.fulfill({
        status: 404,
        json: {
          message: 'No message with that id',
          errorCode: 'NOT_FOUND',
          statusCode: 404,
          error: 'Not Found',
        },
      })
    })
    await form().getByLabel('Kind of message').selectOption('text')
    await form().getByLabel('Phone (international format)').fill(newPhone())
    await form().getByLabel('Text', { exact: true }).fill('Are you there?')
    await form().getByRole('button', { name: 'Send', exact: true }).click()
    await poll(() => answer().getByRole('alert').textContent()).toContain('NOT_FOUND')
    const afterAnswer = reads
    await page.waitForTimeout(4_000)
    await page.unroute('**/api/third-party/messages/*/timeline')
    expect(afterAnswer).toBeGreaterThan(0)
    expect(reads).toBe(afterAnswer)
    expect(complaints).toEqual([])
  })

  it('tells a key without a send scope what to ask an admin for', async () => {
    const reader = await activeKey(app, { scopes: ['read:messages'], clientName: 'Read only' })
    const { page: second } = await openPage(browser)
    await signIn(second, reader.key)
    const note = second.getByRole('alert')
    await poll(() => note.textContent()).toMatch(
      /approved without any send scope.*ask your Dispatch admin to approve it/,
    )
    expect(await second.getByRole('combobox').count()).toBe(0)
    await checkPage(second, 'portal-send-no-scope')
    await second.context().close()
  })
})
