import { renderBody } from './template-text.ts'

/**
 * A template's text with its variables filled: each value in bold, each missing one marked and
 * named, so a person sees at once what a recipient will read and what is still to give.
 */
export function FilledText({ text, variables }: { text: string; variables: Record<string, string> }) {
  return (
    <>
      {renderBody(text, variables).map((part, index) =>
        'text' in part ? (
          part.text
        ) : part.value === null ? (
          <mark key={index} class="missing" title="No value given">{`{{${part.variable}}}`}</mark>
        ) : (
          <strong key={index}>{part.value}</strong>
        ),
      )}
    </>
  )
}
