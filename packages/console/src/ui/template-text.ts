/**
 * A template's texts as the Cloud API gives its components, and a text with its `{{1}}` or
 * `{{name}}` placeholders filled: what a recipient will read (the campaign's audience preview, the
 * portal's send-a-test).
 */

/** The template's body text, from its components as the Cloud API gives them. */
export function bodyText(components: unknown[]): string | null {
  for (const component of components) {
    const c = component as { type?: unknown; text?: unknown }
    if (String(c.type).toUpperCase() === 'BODY' && typeof c.text === 'string') return c.text
  }
  return null
}

/** A piece of the rendered body: text as written, or a variable with its value (null when missing). */
export type BodyPart = { text: string } | { variable: string; value: string | null }

/** The body with `{{1}}` or `{{name}}` filled from the row; a missing one stays named. */
export function renderBody(body: string, variables: Record<string, string>): BodyPart[] {
  const parts: BodyPart[] = []
  let last = 0
  for (const match of body.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)) {
    if (match.index > last) parts.push({ text: body.slice(last, match.index) })
    const name = match[1] ?? ''
    const value = variables[name]
    parts.push({ variable: name, value: value === undefined || value === '' ? null : value })
    last = match.index + match[0].length
  }
  if (last < body.length) parts.push({ text: body.slice(last) })
  return parts
}

/** A component's text by its type (`HEADER` of format TEXT, `FOOTER`), if it has one. */
export function componentText(components: unknown[], type: 'HEADER' | 'FOOTER'): string | null {
  for (const component of components) {
    const c = component as { type?: unknown; text?: unknown; format?: unknown }
    if (String(c.type).toUpperCase() !== type || typeof c.text !== 'string') continue
    if (type === 'HEADER' && String(c.format ?? 'TEXT').toUpperCase() !== 'TEXT') continue
    return c.text
  }
  return null
}

/** The titles of a template's buttons, as the recipient sees them under the message. */
export function buttonTitles(components: unknown[]): string[] {
  for (const component of components) {
    const c = component as { type?: unknown; buttons?: unknown }
    if (String(c.type).toUpperCase() === 'BUTTONS' && Array.isArray(c.buttons)) {
      return c.buttons.map((b) => String((b as { text?: unknown }).text ?? '')).filter(Boolean)
    }
  }
  return []
}

/**
 * The example values Meta keeps with a template's `HEADER` (text) or `BODY`, by variable name:
 * `example.body_text: [["Ana", "4921"]]` fills `{{1}}`, `{{2}}`; `body_text_named_params` (and
 * `header_text_named_params`) name each; `header_text: ["Summer"]` fills the header's `{{1}}`.
 */
export function exampleValues(components: unknown[], type: 'HEADER' | 'BODY'): Record<string, string> {
  const prefix = type === 'HEADER' ? 'header_text' : 'body_text'
  for (const component of components) {
    const c = component as { type?: unknown; example?: Record<string, unknown> }
    if (String(c.type).toUpperCase() !== type || !c.example || typeof c.example !== 'object') continue
    const values: Record<string, string> = {}
    const named = c.example[`${prefix}_named_params`]
    if (Array.isArray(named)) {
      for (const param of named as { param_name?: unknown; example?: unknown }[]) {
        if (typeof param?.param_name === 'string' && param.example != null)
          values[param.param_name] = String(param.example)
      }
    }
    const positional = c.example[prefix]
    // The body's examples are one row (a list in a list); the header's, a flat list.
    const row = Array.isArray(positional) && Array.isArray(positional[0]) ? positional[0] : positional
    if (Array.isArray(row)) {
      row.forEach((value, index) => {
        if (value != null) values[String(index + 1)] = String(value)
      })
    }
    return values
  }
  return {}
}

/**
 * Values to preview a template with when no one has typed any: its own examples where it has
 * them, else each variable's name in brackets (`[first_name]`, `[1]`).
 */
export function previewValues(names: readonly string[], examples: Record<string, string>) {
  return Object.fromEntries(names.map((name) => [name, examples[name] ?? `[${name}]`]))
}
