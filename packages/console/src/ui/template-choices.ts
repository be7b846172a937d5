import type { TemplateView } from '@dispatch/contracts'

/** A template as a picker offers it, with the label it shows. */
export interface TemplateChoice {
  template: TemplateView
  label: string
}

/**
 * A key's templates as a picker offers them: each name and language once. A pooled key's list
 * holds every member's catalog, a template once per number that has it (templates are per WABA); a
 * template some of the list's numbers lack says on how many it is, as a send is refused on a
 * number whose catalog lacks it. The first of the list's entries stands for the others.
 */
export function templateChoices(list: readonly TemplateView[]): TemplateChoice[] {
  const numbers = new Set(list.map((t) => t.senderId))
  const byName = new Map<string, { template: TemplateView; on: Set<string> }>()
  for (const template of list) {
    const name = `${template.name}\u0000${template.language}`
    const seen = byName.get(name)
    if (seen) seen.on.add(template.senderId)
    else byName.set(name, { template, on: new Set([template.senderId]) })
  }
  return [...byName.values()].map(({ template, on }) => ({
    template,
    label:
      `${template.name} (${template.language}` +
      `${template.category ? `, ${template.category.toLowerCase()}` : ''})` +
      `${on.size < numbers.size ? `, on ${on.size} of ${numbers.size} numbers` : ''}`,
  }))
}
