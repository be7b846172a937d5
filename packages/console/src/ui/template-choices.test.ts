import type { TemplateView } from '@dispatch/contracts'
import { describe, expect, it } from 'vitest'
import { templateChoices } from './template-choices.ts'

const template = (name: string, senderId: string, language = 'en_US'): TemplateView => ({
  id: `${name}-${senderId}`,
  name,
  language,
  status: 'APPROVED',
  rejectedReason: null,
  category: 'UTILITY',
  quality: null,
  components: [],
  variables: { parameterFormat: 'positional', body: [], header: null, buttons: [] },
  senderId,
  syncedAt: '2026-12-07T00:00:00.000Z',
  updatedAt: '2026-12-07T00:00:00.000Z',
})

describe('templateChoices', () => {
  it("offers a pooled key's template once, saying on how many numbers when some lack it", () => {
    const choices = templateChoices([
      template('appointment_reminder', 'a'),
      template('order_update', 'a'),
      template('order_update', 'b'),
      template('order_update', 'b', 'pt_BR'),
    ])
    expect(choices.map((c) => c.label)).toEqual([
      'appointment_reminder (en_US, utility), on 1 of 2 numbers',
      'order_update (en_US, utility)',
      'order_update (pt_BR, utility), on 1 of 2 numbers',
    ])
    expect(choices[1]?.template.senderId).toBe('a')
  })

  it("lists a single sender's catalog as it is", () => {
    const choices = templateChoices([template('welcome', 'x'), template('welcome', 'x', 'es')])
    expect(choices.map((c) => c.label)).toEqual(['welcome (en_US, utility)', 'welcome (es, utility)'])
  })
})
