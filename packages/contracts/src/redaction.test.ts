import { describe, expect, it } from 'vitest'
import { MESSAGE_TYPES, type MessageType } from './messages.ts'
import { contentRetentionOf, redactPayload, retentionHours } from './redaction.ts'

const SECRET = 'secret-words'
const media = { mediaId: SECRET, link: `https://example.test/${SECRET}.pdf` }

/** A body of each kind whose every content field holds SECRET. */
const BODIES: Record<MessageType, object> = {
  text: { text: SECRET },
  template: {
    templateId: 'order_shipped',
    language: 'pt_BR',
    variables: { '1': SECRET },
    headerVariables: [{ type: 'image', value: SECRET, originalMediaId: SECRET }],
    buttonVariables: [{ buttonIndex: 0, text: SECRET, type: 'URL' }],
  },
  image: { image: { ...media, text: SECRET } },
  document: { document: { ...media, caption: SECRET, filename: `${SECRET}.pdf` } },
  video: { video: { ...media, caption: SECRET } },
  audio: { audio: media },
  sticker: { sticker: media },
  location: { location: { latitude: -23.5, longitude: -46.6, name: SECRET, address: SECRET } },
  contacts: { contacts: [{ name: { formatted_name: SECRET, first_name: SECRET } }] },
  interactive: {
    interactive: {
      type: 'button',
      header: { type: 'text', text: SECRET },
      body: { text: SECRET },
      action: { buttons: [{ type: 'reply', reply: { id: SECRET, title: SECRET } }] },
    },
  },
  reaction: { reaction: { messageId: 'wamid.quoted', emoji: SECRET } },
}

describe('redactPayload', () => {
  it.each(MESSAGE_TYPES)('%s keeps its recipient and quoted message, and none of its content', (type) => {
    const body = { phone: '+5511987654321', replyTo: 'wamid.earlier', ...BODIES[type] }
    expect(JSON.stringify(body)).toContain(SECRET)
    const redacted = redactPayload(type, body)
    expect(JSON.stringify(redacted)).not.toContain(SECRET)
    expect(redacted).toMatchObject({ phone: '+5511987654321', replyTo: 'wamid.earlier' })
  })

  it('keeps what says which message it was: a template and language, an interactive kind, a reaction target', () => {
    expect(redactPayload('template', { userId: 'US.123', ...BODIES.template })).toEqual({
      userId: 'US.123',
      templateId: 'order_shipped',
      language: 'pt_BR',
    })
    expect(redactPayload('interactive', BODIES.interactive)).toEqual({ interactive: { type: 'button' } })
    expect(redactPayload('reaction', BODIES.reaction)).toEqual({ reaction: { messageId: 'wamid.quoted' } })
  })
})

describe('content retention as stored', () => {
  it('is hours: null retain, 0 discard, N hours, and back', () => {
    for (const value of ['retain', 'discard', 1, 8760] as const) {
      expect(contentRetentionOf(retentionHours(value))).toBe(value)
    }
    expect([retentionHours('retain'), retentionHours('discard'), retentionHours(24)]).toEqual([null, 0, 24])
  })
})
