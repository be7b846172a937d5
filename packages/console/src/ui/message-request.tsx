import { Section } from './page.tsx'

/**
 * What the send asked for, as stored. A message whose content was removed (its retention, a
 * `discard` send, an erasure) says so; what is left names it (type, template), never its content.
 */
export function MessageRequest({
  request,
  redacted,
}: {
  request: Record<string, unknown>
  redacted?: boolean | undefined
}) {
  return (
    <Section title="Request">
      {redacted ? (
        <p class="muted" data-testid="content-discarded">
          Content discarded: its content retention (or an erasure) removed it. What names the message is kept.
        </p>
      ) : null}
      <pre class="request">{JSON.stringify(request, null, 2)}</pre>
    </Section>
  )
}
