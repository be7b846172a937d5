import { type FallbackTemplate, templateVariables } from '@dispatch/contracts'
import { describe, expect, it } from 'vitest'
import { variableProblems, variablesFit } from './check-template.ts'

const shipped = templateVariables(
  [
    { type: 'HEADER', format: 'IMAGE' },
    { type: 'BODY', text: 'Olá {{1}}, seu pedido {{2}} foi enviado.' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'QUICK_REPLY', text: 'Stop' },
        { type: 'URL', url: 'https://x.test/{{1}}' },
      ],
    },
  ],
  'POSITIONAL',
)
const named = templateVariables(
  [
    { type: 'HEADER', format: 'TEXT', text: 'For {{name}}' },
    { type: 'BODY', text: 'Hi {{first_name}}, on {{date}}' },
  ],
  'NAMED',
)
const good: FallbackTemplate = {
  templateId: 't',
  language: 'pt_BR',
  variables: { '1': 'Ana', '2': 'BR-1' },
  headerVariables: [{ type: 'IMAGE', value: null, originalMediaId: 'm' }],
  buttonVariables: [
    { buttonIndex: 1, type: 'URL', text: 'track' },
    { buttonIndex: 0, type: 'QUICK_REPLY', text: 'stop' },
  ],
}

describe('a template’s variables', () => {
  it('are read from its components: body, header and URL buttons', () => {
    expect(shipped).toEqual({
      parameterFormat: 'positional',
      body: ['1', '2'],
      header: { type: 'image' },
      buttons: [{ index: 1, type: 'URL', variables: ['1'] }],
    })
    expect(named).toMatchObject({
      body: ['first_name', 'date'],
      header: { type: 'text', variables: ['name'] },
    })
  })

  // The quick check and the spelled-out one must always agree: a send either fits or has problems.
  const cases: Array<[string, FallbackTemplate, typeof shipped]> = [
    ['a correct send', good, shipped],
    ['a missing body variable', { ...good, variables: { '1': 'Ana' } }, shipped],
    ['an extra body variable', { ...good, variables: { '1': 'a', '2': 'b', '3': 'c' } }, shipped],
    ['a named variable for a positional body', { ...good, variables: { '1': 'a', two: 'b' } }, shipped],
    ['no header', { ...good, headerVariables: [] }, shipped],
    [
      'a header of another type',
      { ...good, headerVariables: [{ type: 'video', value: null, originalMediaId: 'm' }] },
      shipped,
    ],
    [
      'two headers',
      { ...good, headerVariables: [...(good.headerVariables ?? []), ...(good.headerVariables ?? [])] },
      shipped,
    ],
    ['no URL suffix', { ...good, buttonVariables: [] }, shipped],
    [
      'a URL suffix on the wrong button',
      { ...good, buttonVariables: [{ buttonIndex: 0, type: 'URL', text: 'x' }] },
      shipped,
    ],
    [
      'a correct named send',
      {
        templateId: 't',
        language: 'en',
        variables: { first_name: 'A', date: 'B' },
        headerVariables: [{ type: 'text', value: 'Ana', originalMediaId: '-' }],
      },
      named,
    ],
    [
      'a text header without its value',
      {
        templateId: 't',
        language: 'en',
        variables: { first_name: 'A', date: 'B' },
        headerVariables: [{ type: 'text', value: null, originalMediaId: '-' }],
      },
      named,
    ],
    ['nothing at all', { templateId: 't', language: 'en' }, named],
  ]
  it.each(cases)('%s: the quick check and the named problems agree', (_name, send, expected) => {
    expect(variablesFit(send, expected)).toBe(variableProblems('body', send, expected).length === 0)
  })

  it('fits a correct send and names each problem of a wrong one', () => {
    expect(variablesFit(good, shipped)).toBe(true)
    expect(variableProblems('body', { ...good, variables: { '2': 'x', '3': 'y' } }, shipped)).toEqual([
      'body.variables.1 is missing',
      'body.variables.3 is not in the template',
    ])
  })
})
