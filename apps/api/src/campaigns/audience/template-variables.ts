import { AppError } from '../../errors.ts'
import { isMarketing } from '../../sending/checks/send-checks.ts'
import { type SenderRules, templateKey } from '../../sending/checks/send-rules.ts'

/** What an audience is judged against: the template's body variables, and whether it is marketing. */
export interface AudienceTemplate {
  /** The body's variable names; null when the sender's catalog was never synced (nothing checked). */
  expected: string[] | null
  marketing: boolean
}

/**
 * The campaign's template as the sender's synced catalog has it, found as a send finds it
 * (`checkTemplate`): gone from the catalog, or no longer approved, refuses the upload (422), as it
 * would refuse each send of it. A sender never synced checks nothing: any column is a variable.
 */
export function audienceTemplate(
  rules: SenderRules | undefined,
  template: { templateId: string; language: string },
): AudienceTemplate {
  const { templateId, language } = template
  const marketing = isMarketing(rules, {
    type: 'template',
    body: { templateId, language },
    field: 'template',
  })
  if (!rules?.synced) return { expected: null, marketing }
  const known = rules.templates.get(templateKey(templateId, language))
  if (!known) {
    throw new AppError(
      'TEMPLATE_NOT_FOUND',
      `The campaign's template "${templateId}" (${language}) is not in the sender's catalog`,
    )
  }
  if (known.status !== 'APPROVED') {
    throw new AppError(
      'TEMPLATE_NOT_APPROVED',
      `The campaign's template "${templateId}" (${language}) is ${known.status}; only APPROVED templates can be sent`,
    )
  }
  return { expected: known.variables.body, marketing }
}
