import type { WhatsAppWebhook } from '@dispatch/contracts'
import { messageWebhook } from '@dispatch/testing'
import { describe, expect, it } from 'vitest'
import { readInboundMessages } from './whatsapp-messages.ts'
import { STATUS_TIME_AHEAD_MS, STATUS_TIME_BACK_MS } from './whatsapp-statuses.ts'

const now = new Date('2025-06-01T12:00:00Z')
const at = (offsetMs: number) => String((now.getTime() + offsetMs) / 1000)
const NUMBER = '106540352242922'
const item = (fields: Record<string, unknown>) => ({
  from: '5511987654321',
  id: `wamid.${Math.random()}`,
  timestamp: at(0),
  ...fields,
})
const read = (...messages: unknown[]) => readInboundMessages(messageWebhook(NUMBER, ...messages), now)
const contentOf = (fields: Record<string, unknown>) => {
  const { messages, skipped } = read(item(fields))
  expect(skipped).toEqual([])
  return messages[0]?.content
}

describe('readInboundMessages', () => {
  it('reads the sender, the business number, the quoted wamid and the time', () => {
    const { messages } = read(
      item({ id: 'wamid.A', type: 'text', text: { body: 'yes' }, context: { from: '1555', id: 'wamid.Q' } }),
    )
    expect(messages).toEqual([
      {
        platformMessageId: 'wamid.A',
        phoneNumberId: NUMBER,
        phone: '+5511987654321',
        userId: null,
        username: null,
        type: 'text',
        content: { text: 'yes' },
        contextId: 'wamid.Q',
        receivedAt: now,
      },
    ])
  })

  it('normalizes each known type into exactly one camelCase key', () => {
    expect(contentOf({ type: 'text', text: { body: 'hi' } })).toEqual({ text: 'hi' })
    for (const type of ['image', 'document', 'audio', 'video', 'sticker']) {
      expect(contentOf({ type, [type]: { id: 'M1', mime_type: 'image/jpeg' } })).toEqual({
        media: { id: 'M1', mimeType: 'image/jpeg' },
      })
    }
    expect(
      contentOf({
        type: 'document',
        document: { id: 'M2', mime_type: 'application/pdf', sha256: 'abc', caption: 'c', filename: 'a.pdf' },
      }),
    ).toEqual({
      media: { id: 'M2', mimeType: 'application/pdf', sha256: 'abc', caption: 'c', filename: 'a.pdf' },
    })
    expect(contentOf({ type: 'button', button: { text: 'Stop', payload: 'STOP' } })).toEqual({
      button: { text: 'Stop', payload: 'STOP' },
    })
    expect(
      contentOf({
        type: 'interactive',
        interactive: { type: 'button_reply', button_reply: { id: 'b1', title: 'Yes' } },
      }),
    ).toEqual({ button: { id: 'b1', title: 'Yes' } })
    expect(
      contentOf({
        type: 'interactive',
        interactive: { type: 'list_reply', list_reply: { id: 'r1', title: 'Red', description: 'Bright' } },
      }),
    ).toEqual({ listReply: { id: 'r1', title: 'Red', description: 'Bright' } })
    expect(
      contentOf({
        type: 'location',
        location: { latitude: -23.5, longitude: -46.6, name: 'Office', url: 'x' },
      }),
    ).toEqual({ location: { latitude: -23.5, longitude: -46.6, name: 'Office' } })
    expect(contentOf({ type: 'reaction', reaction: { message_id: 'wamid.R', emoji: '👍' } })).toEqual({
      reaction: { emoji: '👍', messageId: 'wamid.R' },
    })
    // Shared contact cards come as the Cloud API gives them.
    const card = {
      name: { formatted_name: 'Ana Lima', first_name: 'Ana' },
      phones: [{ phone: '+55 11 98765-4321' }],
    }
    expect(contentOf({ type: 'contacts', contacts: [card] })).toEqual({ contacts: [card] })
    // A removed reaction comes without its emoji.
    expect(contentOf({ type: 'reaction', reaction: { message_id: 'wamid.R' } })).toEqual({
      reaction: { emoji: null, messageId: 'wamid.R' },
    })
  })

  it('keeps any other type, and other interactive replies, as unsupported with their type', () => {
    const { messages, skipped } = read(
      item({ type: 'unsupported', errors: [{ code: 131051 }] }),
      item({ type: 'order', order: { catalog_id: '1' } }),
      item({ type: 'interactive', interactive: { type: 'nfm_reply', nfm_reply: {} } }),
      // Names an object's own properties must not reach as a known type.
      item({ type: 'constructor' }),
      item({ type: '__proto__' }),
    )
    expect(skipped).toEqual([])
    expect(messages.map((m) => [m.type, m.content])).toEqual([
      ['unsupported', { unsupported: true }],
      ['order', { unsupported: true }],
      ['interactive', { unsupported: true }],
      ['constructor', { unsupported: true }],
      ['__proto__', { unsupported: true }],
    ])
  })

  it('skips malformed items by position and reason, never their values, and reads the good ones', () => {
    const { messages, skipped } = read(
      item({ id: 'wamid.good', type: 'text', text: { body: 'ok' } }),
      item({ type: 'text' }),
      item({ type: 'text', text: { body: 42 } }),
      item({ type: 'image', image: { id: 'M' } }),
      item({ type: 'interactive', interactive: { type: 'button_reply' } }),
      item({ type: 'location', location: { latitude: 91, longitude: 0 } }),
      item({ from: '+5511987654321', type: 'text', text: { body: 'x' } }),
      item({ from: undefined, type: 'text', text: { body: 'x' } }),
      item({ id: 'x'.repeat(257), type: 'text', text: { body: 'x' } }),
      item({ type: 'text', text: { body: 'x' }, context: { id: 5 } }),
      null,
      'wamid.secret',
    )
    expect(messages.map((m) => m.platformMessageId)).toEqual(['wamid.good'])
    expect(skipped.map((s) => s.at)).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((i) => `entry[0].changes[0].messages[${i}]`),
    )
    expect(skipped[0]?.reason).toMatch(/^\/text /)
    expect(skipped[1]?.reason).toMatch(/^\/text\/body /)
    expect(skipped[2]?.reason).toMatch(/^\/image/)
    expect(skipped[3]?.reason).toBe('/interactive/button_reply is required')
    expect(skipped[4]?.reason).toMatch(/^\/location\/latitude /)
    expect(skipped[5]?.reason).toMatch(/^\/from /)
    expect(JSON.stringify(skipped)).not.toMatch(/5511987654321|wamid\.secret/)
  })

  it('takes times inside the statuses window, edges included, and skips those outside', () => {
    const { messages, skipped } = read(
      item({ id: 'a', type: 'text', text: { body: '' }, timestamp: at(STATUS_TIME_AHEAD_MS) }),
      item({ id: 'b', type: 'text', text: { body: '' }, timestamp: at(-STATUS_TIME_BACK_MS) }),
      item({ id: 'c', type: 'text', text: { body: '' }, timestamp: at(STATUS_TIME_AHEAD_MS + 1000) }),
      item({ id: 'd', type: 'text', text: { body: '' }, timestamp: '999999999999' }),
    )
    expect(messages.map((m) => m.platformMessageId)).toEqual(['a', 'b'])
    expect(skipped.map((s) => s.reason)).toEqual([
      expect.stringMatching(/outside/),
      expect.stringMatching(/outside/),
    ])
  })

  it('skips every message of a change without a valid business number', () => {
    for (const metadata of [undefined, 'x', {}, { phone_number_id: 10654 }, { phone_number_id: 'abc' }]) {
      const body: WhatsAppWebhook = messageWebhook(NUMBER, item({ type: 'text', text: { body: 'x' } }))
      const change = body.entry[0]?.changes[0]
      if (!change) throw new Error('no change')
      change.value.metadata = metadata
      const { messages, skipped } = readInboundMessages(body, now)
      expect(messages).toEqual([])
      expect(skipped).toEqual([
        { at: 'entry[0].changes[0].messages[0]', reason: 'metadata.phone_number_id is missing or invalid' },
      ])
    }
  })
})
