import type { MessageType, TemplateView } from '@dispatch/contracts'
import { useMutation } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Outcome } from '../../ui/status.tsx'
import { KindFields } from './kind-fields.tsx'
import { KIND_LABELS, kindBody, kindsFor } from './kinds.ts'
import { SentMessage } from './sent-message.tsx'
import { NO_TEMPLATE_VALUES, TemplateFields, type TemplateValues, templateBody } from './template-fields.tsx'

/**
 * A test message of any kind the key may send, to one phone, answered with the message's
 * timeline as it happens: the whole path seen working (or where it stops) without leaving the page.
 */
export function SendTest({ scopes }: { scopes: readonly string[] }) {
  const kinds = kindsFor(scopes)
  const [kind, setKind] = useState<MessageType | undefined>(kinds[0])
  const [template, setTemplate] = useState<TemplateView>()
  const [values, setValues] = useState<TemplateValues>(NO_TEMPLATE_VALUES)
  const send = useMutation({
    mutationFn: async ({ kind, form }: { kind: MessageType; form: FormData }) => {
      const own =
        kind === 'template' ? (template ? templateBody(template, values) : {}) : kindBody(kind, form)
      const body = { phone: text(form, 'phone') ?? '', ...own, clientReference: 'portal-test' }
      // Every send endpoint is `send-<kind>`, with its body as built above.
      const answer = await api.POST(
        `/api/third-party/messages/send-${kind}` as '/api/third-party/messages/send-text',
        {
          body: body as never,
        },
      )
      return { ...answer, at: Date.now() }
    },
  })
  if (kinds.length === 0 || !kind) {
    return (
      <Page title="Send a test message">
        <p class="error" role="alert">
          This key was approved without any send scope (send:free-text, send:template, send:image…), so it
          cannot send messages. A key's scopes are set when an admin approves it: request a key that includes
          the kinds you need (POST /api/api-keys/request) and ask your Dispatch admin to approve it.
        </p>
      </Page>
    )
  }
  return (
    <Page title="Send a test message">
      <form
        class="stack narrow"
        aria-label="Send a test message"
        onSubmit={(event) => {
          event.preventDefault()
          send.mutate({ kind, form: new FormData(event.currentTarget) })
        }}
      >
        <div class="field">
          <label for="send-kind">Kind of message</label>
          <select
            id="send-kind"
            value={kind}
            onChange={(event) => {
              setKind(event.currentTarget.value as MessageType)
              send.reset()
            }}
          >
            {kinds.map((k) => (
              <option key={k} value={k}>
                {KIND_LABELS[k]}
              </option>
            ))}
          </select>
        </div>
        <label>
          Phone (international format)
          <input name="phone" type="tel" required placeholder="+5511987654321" autocomplete="off" />
        </label>
        {kind === 'template' ? (
          <TemplateFields template={template} onTemplate={setTemplate} values={values} onValues={setValues} />
        ) : (
          <KindFields kind={kind} />
        )}
        <button type="submit" disabled={send.isPending || (kind === 'template' && !template)}>
          Send
        </button>
      </form>
      <Outcome mutation={send} done={send.data ? `Accepted: message ${send.data.messageId}.` : ''} />
      {send.data ? (
        <SentMessage key={send.data.messageId} id={send.data.messageId} sentAt={send.data.at} />
      ) : null}
    </Page>
  )
}
