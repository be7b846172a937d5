import type { FallbackTemplate, TemplateVariables } from '@dispatch/contracts'
import { AppError } from '../../errors.ts'
import { type SenderRules, templateKey } from './send-rules.ts'

const lower = (value: string) => value.toLowerCase()
const list = (names: string[]) => names.map((n) => `{{${n}}}`).join(', ')

/**
 * Whether the variables fit, without building anything: the hot path of a correct send. Only a
 * send that fails this gets its problems spelled out (`variableProblems`).
 */
export function variablesFit(send: FallbackTemplate, expected: TemplateVariables): boolean {
  const variables = send.variables
  let given = 0
  if (variables) for (const _ in variables) given++
  if (given !== expected.body.length) return false
  for (const name of expected.body) if (variables?.[name] === undefined) return false
  const headers = send.headerVariables
  const header = expected.header
  if (header === null) {
    if (headers && headers.length > 0) return false
  } else if (header.type !== 'location') {
    const first = headers?.[0]
    if (!first || headers.length > 1 || first.type.toLowerCase() !== header.type) return false
    if (header.type === 'text' && !first.value) return false
  }
  const buttons = send.buttonVariables
  for (const button of expected.buttons) {
    let found = false
    if (buttons) {
      for (const b of buttons) {
        if (b.buttonIndex === button.index && b.type.toLowerCase() === 'url') found = true
      }
    }
    if (!found) return false
  }
  if (buttons) {
    for (const b of buttons) {
      if (b.type.toLowerCase() !== 'url') continue
      let dynamic = false
      for (const button of expected.buttons) if (button.index === b.buttonIndex) dynamic = true
      if (!dynamic) return false
    }
  }
  return true
}

/** What is wrong with the variables a send gives, one phrase per variable, each naming its field. */
export function variableProblems(
  field: string,
  send: FallbackTemplate,
  expected: TemplateVariables,
): string[] {
  const problems: string[] = []

  const wanted = new Set(expected.body)
  const given = Object.keys(send.variables ?? {})
  for (const name of expected.body) {
    if (!given.includes(name)) problems.push(`${field}.variables.${name} is missing`)
  }
  for (const name of given) {
    if (wanted.has(name)) continue
    const positionalGivenNamed = expected.parameterFormat === 'positional' && !/^[0-9]+$/.test(name)
    const namedGivenPositional = expected.parameterFormat === 'named' && /^[0-9]+$/.test(name)
    problems.push(
      positionalGivenNamed || namedGivenPositional
        ? `${field}.variables.${name} is the wrong kind: the template's body takes ${expected.parameterFormat} variables`
        : `${field}.variables.${name} is not in the template`,
    )
  }

  const headers = send.headerVariables ?? []
  const header = expected.header
  if (header === null || header.type === 'location') {
    if (header === null && headers.length > 0) {
      problems.push(`${field}.headerVariables is not in the template: its header takes no variable`)
    }
  } else {
    const first = headers[0]
    if (!first) {
      problems.push(
        header.type === 'text'
          ? `${field}.headerVariables[0] is missing: the header's text takes ${list(header.variables)}`
          : `${field}.headerVariables[0] is missing: the header takes an ${header.type} (originalMediaId)`,
      )
    } else if (lower(first.type) !== header.type) {
      problems.push(
        `${field}.headerVariables[0].type is "${first.type}"; the template's header takes "${header.type}"`,
      )
    } else if (header.type === 'text' && (first.value === null || first.value === '')) {
      problems.push(
        `${field}.headerVariables[0].value is missing: the header's text takes ${list(header.variables)}`,
      )
    }
    for (let i = 1; i < headers.length; i++)
      problems.push(`${field}.headerVariables[${i}] is not in the template`)
  }

  const buttons = send.buttonVariables ?? []
  for (const button of expected.buttons) {
    const at = buttons.findIndex((b) => b.buttonIndex === button.index)
    const variable = buttons[at]
    if (!variable) {
      problems.push(`${field}.buttonVariables: the URL suffix of button ${button.index} is missing`)
    } else if (lower(variable.type) !== 'url') {
      problems.push(
        `${field}.buttonVariables[${at}].type is "${variable.type}"; button ${button.index} is a URL button`,
      )
    }
  }
  buttons.forEach((variable, i) => {
    const dynamic = expected.buttons.some((b) => b.index === variable.buttonIndex)
    // A quick reply's payload or a code to copy may go to any button: the template names those.
    if (!dynamic && lower(variable.type) === 'url') {
      problems.push(`${field}.buttonVariables[${i}]: button ${variable.buttonIndex} has no URL variable`)
    }
  })
  return problems
}

/**
 * Checks a template send (or a free-form send's fallback) against the sender's synced catalog:
 * throws `TEMPLATE_NOT_FOUND`, `TEMPLATE_NOT_APPROVED` or `TEMPLATE_PARAMETERS_MISMATCH` (every
 * problem named) for what the platform would refuse. A sender never synced checks nothing.
 */
export function checkTemplate(rules: SenderRules | undefined, send: FallbackTemplate, field: string): void {
  if (!rules?.synced) return
  const template = rules.templates.get(templateKey(send.templateId, send.language))
  if (!template) {
    const others = rules.languages.get(send.templateId)
    throw new AppError(
      'TEMPLATE_NOT_FOUND',
      `${field}: no template "${send.templateId}" in language ${send.language} in the sender's catalog` +
        (others ? ` (it exists in ${others.join(', ')})` : ''),
    )
  }
  if (template.status !== 'APPROVED') {
    throw new AppError(
      'TEMPLATE_NOT_APPROVED',
      `${field}: template "${send.templateId}" (${send.language}) is ${template.status}` +
        (template.rejectedReason ? `: ${template.rejectedReason}` : '') +
        '; only APPROVED templates can be sent',
    )
  }
  if (variablesFit(send, template.variables)) return
  const problems = variableProblems(field, send, template.variables)
  if (problems.length > 0) {
    throw new AppError(
      'TEMPLATE_PARAMETERS_MISMATCH',
      `${field}: ${problems.join('; ')} (template "${send.templateId}" ${send.language})`,
    )
  }
}
