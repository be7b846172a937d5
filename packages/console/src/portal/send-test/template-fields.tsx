import type { SendTemplateBody, TemplateView } from '@dispatch/contracts'
import { useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { FilledText } from '../../ui/filled-text.tsx'
import { Loaded } from '../../ui/status.tsx'
import { templateChoices } from '../../ui/template-choices.ts'
import { bodyText, buttonTitles, componentText } from '../../ui/template-text.ts'

/** What the form holds for a template: the variables by name, the header's value, URL suffixes by button. */
export interface TemplateValues {
  body: Record<string, string>
  header: string
  buttons: Record<number, string>
}
const EMPTY: TemplateValues = { body: {}, header: '', buttons: {} }

/** The template part of a send body, from the chosen template and the values given. */
export function templateBody(
  template: TemplateView,
  values: TemplateValues,
): Omit<SendTemplateBody, 'phone'> {
  const { header, buttons, body } = template.variables
  return {
    templateId: template.name,
    language: template.language,
    ...(body.length > 0
      ? { variables: Object.fromEntries(body.map((name) => [name, values.body[name] ?? ''])) }
      : {}),
    ...(header?.type === 'text'
      ? { headerVariables: [{ type: 'text', value: values.header, originalMediaId: '-' }] }
      : header && header.type !== 'location'
        ? { headerVariables: [{ type: header.type, value: null, originalMediaId: values.header }] }
        : {}),
    ...(buttons.length > 0
      ? {
          buttonVariables: buttons.map((b) => ({
            buttonIndex: b.index,
            type: 'URL',
            text: values.buttons[b.index] ?? '',
          })),
        }
      : {}),
  }
}

/** The message as the recipient will read it, filled with the values given so far. */
function TemplatePreview({ template, values }: { template: TemplateView; values: TemplateValues }) {
  const headerText = componentText(template.components, 'HEADER')
  const headerVariable =
    template.variables.header?.type === 'text' ? template.variables.header.variables[0] : undefined
  const body = bodyText(template.components)
  const footer = componentText(template.components, 'FOOTER')
  const buttons = buttonTitles(template.components)
  return (
    <section class="card preview" aria-label="Preview">
      <h3>Preview</h3>
      {headerText ? (
        <p>
          <strong>
            <FilledText
              text={headerText}
              variables={headerVariable ? { [headerVariable]: values.header } : {}}
            />
          </strong>
        </p>
      ) : null}
      <p class="wrap">
        {body ? <FilledText text={body} variables={values.body} /> : 'This template has no body text.'}
      </p>
      {footer ? <p class="muted">{footer}</p> : null}
      {buttons.length > 0 ? <p class="muted">Buttons: {buttons.join(' · ')}</p> : null}
    </section>
  )
}

/**
 * A template picker over the sender's approved templates, a field for each of the chosen one's
 * variables, and its preview as the values are typed.
 */
export function TemplateFields(props: {
  template: TemplateView | undefined
  onTemplate: (template: TemplateView | undefined) => void
  values: TemplateValues
  onValues: (values: TemplateValues) => void
}) {
  const templates = useQuery({
    queryKey: ['templates', 'approved'],
    queryFn: () =>
      api.GET('/api/third-party/templates', {
        params: { query: { page: 1, take: 1000, order: 'ASC', orderField: 'name', status: 'APPROVED' } },
      }),
  })
  const [chosen, setChosen] = useState('')
  const { template, values, onValues } = props
  return (
    <Loaded query={templates}>
      {({ data }) => {
        const choices = templateChoices(data)
        return data.length === 0 ? (
          <p class="muted">
            Your sender has no approved template yet. Ask your Dispatch admin to sync its templates.
          </p>
        ) : (
          <>
            <div class="field">
              <label for="send-template">Template</label>
              <select
                id="send-template"
                name="template"
                required
                value={chosen}
                onChange={(event) => {
                  const index = event.currentTarget.value
                  setChosen(index)
                  onValues(EMPTY)
                  props.onTemplate(index === '' ? undefined : choices[Number(index)]?.template)
                }}
              >
                <option value="">Choose an approved template</option>
                {choices.map(({ template: t, label }, index) => (
                  <option key={`${t.name} ${t.language}`} value={String(index)}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            {template ? (
              <>
                {template.variables.header && template.variables.header.type !== 'location' ? (
                  <label>
                    {template.variables.header.type === 'text'
                      ? 'Header text'
                      : `Header ${template.variables.header.type}: media id (from POST /api/third-party/media)`}
                    <input
                      required
                      maxLength={1024}
                      autocomplete="off"
                      value={values.header}
                      onInput={(event) => onValues({ ...values, header: event.currentTarget.value })}
                    />
                  </label>
                ) : null}
                {template.variables.body.map((name) => (
                  <label key={name}>
                    {`Variable {{${name}}}`}
                    <input
                      required
                      maxLength={1024}
                      autocomplete="off"
                      value={values.body[name] ?? ''}
                      onInput={(event) =>
                        onValues({ ...values, body: { ...values.body, [name]: event.currentTarget.value } })
                      }
                    />
                  </label>
                ))}
                {template.variables.buttons.map((button) => (
                  <label key={button.index}>
                    {`Button ${button.index + 1}: the end of its URL`}
                    <input
                      required
                      maxLength={2000}
                      autocomplete="off"
                      value={values.buttons[button.index] ?? ''}
                      onInput={(event) =>
                        onValues({
                          ...values,
                          buttons: { ...values.buttons, [button.index]: event.currentTarget.value },
                        })
                      }
                    />
                  </label>
                ))}
                <TemplatePreview template={template} values={values} />
              </>
            ) : null}
          </>
        )
      }}
    </Loaded>
  )
}

export { EMPTY as NO_TEMPLATE_VALUES }
