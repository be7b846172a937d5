import { Outcome } from './status.tsx'

/** What a cancel can still stop: a message no worker has taken. */
const CANCELABLE = new Set(['queued', 'scheduled'])

/**
 * A message page's "Cancel message" (console: any key's, audited; portal: the key's own), shown
 * while the message can still be stopped, and the cancel's outcome.
 */
export function CancelMessage(props: {
  status: string
  cancel: { mutate: () => void; isPending: boolean; isError: boolean; isSuccess: boolean; error: unknown }
}) {
  const { cancel } = props
  return (
    <>
      {CANCELABLE.has(props.status) ? (
        <div class="row">
          <button type="button" class="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            Cancel message
          </button>
        </div>
      ) : null}
      <Outcome mutation={cancel} done="Canceled: it will not be sent." />
    </>
  )
}
