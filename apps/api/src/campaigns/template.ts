import type { CreateCampaignBody, FallbackTemplate } from '@dispatch/contracts'
import { AppError } from '../errors.ts'
import { checkTemplate } from '../sending/checks/check-template.ts'
import { templateKey } from '../sending/checks/send-rules.ts'
import type { SendRulesCache } from '../sending/checks/send-rules-cache.ts'

/**
 * Checks a campaign's template against its sender's synced catalog as a send would be: it exists
 * in that language and is APPROVED (else 422 `TEMPLATE_NOT_FOUND` / `TEMPLATE_NOT_APPROVED`), and
 * its header and button variables, the same for every recipient, fit. Answers the names of the body
 * variables each row must give (empty when the sender's catalog is not synced: the rows then give
 * what they give, and the platform judges).
 */
export function checkCampaignTemplate(
  rules: SendRulesCache,
  senderId: string,
  template: CreateCampaignBody['template'],
): string[] | null {
  const senderRules = rules.get(senderId)
  if (!senderRules?.synced) return null
  const known = senderRules.templates.get(templateKey(template.templateId, template.language))
  const body = known?.variables.body ?? []
  const send: FallbackTemplate = {
    ...template,
    // The rows fill the body: checked here as if each gave every variable.
    ...(body.length > 0 ? { variables: Object.fromEntries(body.map((name) => [name, 'x'])) } : {}),
  }
  checkTemplate(senderRules, send, 'body.template')
  return body
}

export const notInState = (what: string, status: string) =>
  new AppError('INVALID_STATE_TRANSITION', `The campaign is ${status}: ${what}`)
