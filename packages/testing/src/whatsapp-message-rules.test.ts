import { describe, expect, it } from 'vitest'
import { messageRefusal } from './whatsapp-message-rules.ts'

// The fake Cloud API refuses what Meta refuses, for the limits Dispatch checks at accept: a test
// that got past Dispatch's checks would still be caught at the fake.
const message = (type: string, object: unknown, extra: object = {}) => ({
  messaging_product: 'whatsapp',
  to: '5511987654321',
  type,
  [type]: object,
  ...extra,
})
const buttons = (n: number, title = 'Yes') =>
  Array.from({ length: n }, (_, i) => ({ type: 'reply', reply: { id: `b${i}`, title: `${title}${i}` } }))
const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }))
const interactive = (value: object) => message('interactive', { body: { text: 'Pick one' }, ...value })
const details = (answer: ReturnType<typeof messageRefusal>) =>
  (answer?.body as { error?: { code: number; error_data?: { details: string } } } | undefined)?.error

describe("the fake's refusals, as Meta's", () => {
  it.each<[string, object]>([
    ['a text', message('text', { body: 'hi' })],
    [
      'a document by id, with a caption',
      message('document', { id: '1', caption: 'Invoice', filename: 'a.pdf' }),
    ],
    ['a sticker by link', message('sticker', { link: 'https://cdn.example.com/a.webp' })],
    ['a location', message('location', { latitude: -23.5, longitude: -46.6 })],
    ['a contact card', message('contacts', [{ name: { formatted_name: 'Ana Lima', first_name: 'Ana' } }])],
    ['3 reply buttons', interactive({ type: 'button', action: { buttons: buttons(3) } })],
    [
      'a list of 10 rows',
      interactive({ type: 'list', action: { button: 'See', sections: [{ rows: rows(10) }] } }),
    ],
    [
      'a cta_url',
      interactive({
        type: 'cta_url',
        action: { name: 'cta_url', parameters: { display_text: 'Go', url: 'https://x.example.com' } },
      }),
    ],
    [
      'a location request',
      interactive({ type: 'location_request_message', action: { name: 'send_location' } }),
    ],
    ['a reaction', message('reaction', { message_id: 'wamid.abc', emoji: '👍' })],
    ['a quoting text', message('text', { body: 'see above' }, { context: { message_id: 'wamid.abc' } })],
  ])('takes %s', (_, body) => {
    expect(messageRefusal(body as Record<string, unknown>)).toBeUndefined()
  })

  it.each<[string, object, RegExp]>([
    ['4 reply buttons', interactive({ type: 'button', action: { buttons: buttons(4) } }), /1 to 3 buttons/],
    [
      'a button title of 21',
      interactive({
        type: 'button',
        action: { buttons: [{ type: 'reply', reply: { id: 'a', title: 'x'.repeat(21) } }] },
      }),
      /title is at most 20/,
    ],
    [
      '11 list rows in two sections',
      interactive({
        type: 'list',
        action: { button: 'See', sections: [{ rows: rows(6) }, { rows: rows(5) }] },
      }),
      /1 to 10 rows in all/,
    ],
    [
      'a footer of 61',
      interactive({ type: 'button', footer: { text: 'f'.repeat(61) }, action: { buttons: buttons(1) } }),
      /footer/,
    ],
    [
      'a cta_url over http',
      interactive({
        type: 'cta_url',
        action: { name: 'cta_url', parameters: { display_text: 'Go', url: 'http://x.example.com' } },
      }),
      /https/,
    ],
    ['an unknown interactive type', interactive({ type: 'carousel', action: {} }), /not supported/],
    ['a caption on audio', message('audio', { id: '1', caption: 'no' }), /takes no caption/],
    ['a caption on a sticker', message('sticker', { id: '1', caption: 'no' }), /takes no caption/],
    [
      'both id and link',
      message('document', { id: '1', link: 'https://x.example.com/a.pdf' }),
      /exactly one/,
    ],
    ['a link over http', message('image', { link: 'http://x.example.com/a.png' }), /https/],
    ['a latitude of 91', message('location', { latitude: 91, longitude: 0 }), /latitude/],
    ['no contacts', message('contacts', []), /at least one contact/],
    ['a reaction to no wamid', message('reaction', { message_id: 'abc', emoji: '👍' }), /wamid/],
    ['a quote of no wamid', message('text', { body: 'x' }, { context: { message_id: 'abc' } }), /wamid/],
    ['an unknown type', message('fax', {}), /Unsupported message type/],
  ])('refuses %s with 131009, saying why', (_, body, reason) => {
    const answer = messageRefusal(body as Record<string, unknown>)
    expect(answer?.status).toBe(400)
    expect(details(answer)?.code).toBe(131009)
    expect(details(answer)?.error_data?.details).toMatch(reason)
  })
})
