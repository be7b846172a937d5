import { useMutation } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { text } from '../ui/format.ts'
import { Page } from '../ui/page.tsx'
import { Outcome } from '../ui/status.tsx'

/** A text message to one phone, to see the whole path work. */
export function SendTest() {
  const send = useMutation({
    mutationFn: (form: FormData) =>
      api.POST('/api/third-party/messages/send-text', {
        body: {
          phone: text(form, 'phone') ?? '',
          text: text(form, 'text') ?? '',
          clientReference: 'portal-test',
        },
      }),
  })
  return (
    <Page title="Send a test message">
      <form
        class="stack narrow"
        onSubmit={(event) => {
          event.preventDefault()
          send.mutate(new FormData(event.currentTarget))
        }}
      >
        <label>
          Phone (international format)
          <input name="phone" type="tel" required placeholder="+5511987654321" autocomplete="off" />
        </label>
        <label>
          Text
          <textarea name="text" required rows={3} maxLength={4096} />
        </label>
        <button type="submit" disabled={send.isPending}>
          Send
        </button>
      </form>
      <Outcome mutation={send} />
      {send.data ? (
        <p role="status">
          Accepted:{' '}
          <Link href={`/messages/${send.data.messageId}`}>follow message {send.data.messageId}</Link>
        </p>
      ) : null}
    </Page>
  )
}
