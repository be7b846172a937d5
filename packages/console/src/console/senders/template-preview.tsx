import type { TemplateView } from '@dispatch/contracts'
import { FilledText } from '../../ui/filled-text.tsx'
import {
  bodyText,
  buttonTitles,
  componentText,
  exampleValues,
  previewValues,
} from '../../ui/template-text.ts'

/**
 * A catalog template as a recipient would read it, filled the way the portal's previews fill a
 * send: with the template's own examples where Meta keeps them, else each variable's name.
 */
export function TemplatePreview({ template }: { template: TemplateView }) {
  const { components, variables } = template
  const header = componentText(components, 'HEADER')
  const headerNames = variables.header?.type === 'text' ? variables.header.variables : []
  const mediaHeader = variables.header && variables.header.type !== 'text' ? variables.header.type : null
  const body = bodyText(components)
  const footer = componentText(components, 'FOOTER')
  const buttons = buttonTitles(components)
  return (
    <div class="template-preview">
      {mediaHeader ? <p class="muted">[{mediaHeader} header]</p> : null}
      {header ? (
        <p>
          <strong>
            <FilledText
              text={header}
              variables={previewValues(headerNames, exampleValues(components, 'HEADER'))}
            />
          </strong>
        </p>
      ) : null}
      <p>
        {body ? (
          <FilledText
            text={body}
            variables={previewValues(variables.body, exampleValues(components, 'BODY'))}
          />
        ) : (
          'No body text.'
        )}
      </p>
      {footer ? <p class="muted">{footer}</p> : null}
      {buttons.length > 0 ? <p class="muted">Buttons: {buttons.join(' · ')}</p> : null}
    </div>
  )
}
