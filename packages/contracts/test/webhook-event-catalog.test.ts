import Value from 'typebox/value'
import { describe, expect, it } from 'vitest'
import {
  WEBHOOK_EVENT_TYPES,
  webhookEventBody,
  webhookEventCatalog,
  webhookEventExample,
} from '../src/index.ts'
import { WEBHOOK_EVENT_DATA } from '../src/webhook-event-data.ts'

describe('the webhook event catalog', () => {
  const catalog = webhookEventCatalog()

  it('has every type an endpoint can subscribe to, once, in their order, and nothing else', () => {
    expect(catalog.map((entry) => entry.type)).toEqual([...WEBHOOK_EVENT_TYPES])
    expect(Object.keys(WEBHOOK_EVENT_DATA).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort())
  })

  it.each(WEBHOOK_EVENT_TYPES)('%s: a description, and an example its own schema accepts', (type) => {
    const entry = catalog.find((e) => e.type === type)
    expect(entry?.description.length).toBeGreaterThan(10)
    const example = webhookEventExample(type)
    expect(example).toMatchObject({ type, example: true })
    const [, schema] = WEBHOOK_EVENT_DATA[type]
    expect([...Value.Errors(schema, example.data)]).toEqual([])
    // Every event's data carries its sequence, as the database writes it.
    expect(example.data.sequence).toBe(1)
  })

  it('message examples name a message, and a failure its error', () => {
    expect(webhookEventExample('message.delivered').data).toMatchObject({
      messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'delivered',
      error: null,
    })
    expect(webhookEventExample('message.failed').data).toMatchObject({
      status: 'failed',
      error: { code: '131026', willRetry: false },
    })
  })

  it('an example body says it is one; a real event body does not', () => {
    const example = JSON.parse(
      webhookEventBody(webhookEventExample('message.sent', '2026-12-01T00:00:00.000Z')),
    )
    expect(Object.keys(example)).toEqual(['type', 'timestamp', 'example', 'data'])
    expect(example).toMatchObject({
      type: 'message.sent',
      timestamp: '2026-12-01T00:00:00.000Z',
      example: true,
    })
    const real = JSON.parse(webhookEventBody({ type: 'message.sent', timestamp: 't', data: { a: 1 } }))
    expect(Object.keys(real)).toEqual(['type', 'timestamp', 'data'])
  })
})
