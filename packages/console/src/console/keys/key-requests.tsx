import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api, paging } from '../../api.ts'
import { integer, text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { Time } from '../../ui/time.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'

interface PendingKey {
  id: string
  clientName: string
  email: string
  scopes: string[]
  requestedTenantId: string | null
  createdAt: string
}

/**
 * Approves a key binding a tenant (the approval e-mail goes out as through the API), then sets
 * the sender and limits, if any were given, as an edit of the approved key.
 */
async function approve(id: string, form: FormData) {
  const tenantId = text(form, 'tenantId')
  await api.POST('/api/admin/api-keys/{id}/approve', {
    params: { path: { id } },
    body: tenantId ? { tenantId } : {},
  })
  const limits = {
    ...(text(form, 'senderId') ? { senderId: text(form, 'senderId') } : {}),
    ...(integer(form, 'ratePerSecond') !== undefined
      ? { ratePerSecond: integer(form, 'ratePerSecond') }
      : {}),
    ...(integer(form, 'dailyQuota') !== undefined ? { dailyQuota: integer(form, 'dailyQuota') } : {}),
  }
  if (Object.keys(limits).length > 0) {
    await api.PATCH('/api/admin/api-keys/{id}', { params: { path: { id } }, body: limits })
  }
}

function KeyRequest({ request }: { request: PendingKey }) {
  const client = useQueryClient()
  const senders = useSenderOptions()
  const done = () => client.invalidateQueries({ queryKey: ['api-keys'] })
  const approval = useMutation({ mutationFn: (form: FormData) => approve(request.id, form), onSuccess: done })
  const rejection = useMutation({
    mutationFn: (reason: string) =>
      api.POST('/api/admin/api-keys/{id}/reject', { params: { path: { id: request.id } }, body: { reason } }),
    onSuccess: done,
  })
  const id = request.id
  return (
    <article class="card" aria-labelledby={`req-${id}`}>
      <h2 id={`req-${id}`}>
        {request.clientName} <span class="muted">({request.email})</span>
      </h2>
      <p>
        Requested <Time at={request.createdAt} />; tenant asked for:{' '}
        <strong>{request.requestedTenantId ?? 'none'}</strong>; scopes: {request.scopes.join(', ')}
      </p>
      <form
        class="row"
        aria-label={`Approve ${request.clientName}`}
        onSubmit={(event) => {
          event.preventDefault()
          approval.mutate(new FormData(event.currentTarget))
        }}
      >
        <label>
          Tenant
          <input name="tenantId" defaultValue={request.requestedTenantId ?? ''} />
        </label>
        <label>
          Sender
          <select name="senderId">
            <option value="">Default</option>
            {senders.map((sender) => (
              <option key={sender.id} value={sender.id}>
                {sender.displayName}
              </option>
            ))}
          </select>
        </label>
        <label>
          Rate per second
          <input name="ratePerSecond" type="number" min="1" />
        </label>
        <label>
          Daily quota
          <input name="dailyQuota" type="number" min="1" />
        </label>
        <button type="submit" disabled={approval.isPending}>
          Approve
        </button>
      </form>
      <form
        class="row"
        aria-label={`Reject ${request.clientName}`}
        onSubmit={(event) => {
          event.preventDefault()
          rejection.mutate(text(new FormData(event.currentTarget), 'reason') ?? '')
        }}
      >
        <label>
          Reason for rejecting
          <input name="reason" required />
        </label>
        <button type="submit" class="danger" disabled={rejection.isPending}>
          Reject
        </button>
      </form>
      <Outcome mutation={approval} />
      <Outcome mutation={rejection} />
    </article>
  )
}

/** The pending key requests, each approved or rejected where it stands. */
export function KeyRequests() {
  const pending = useQuery({
    queryKey: ['api-keys', 'pending'],
    queryFn: () =>
      api.GET('/api/admin/api-keys', { params: { query: { ...paging(1, 100), status: 'pending' } } }),
  })
  return (
    <Page title="Key requests">
      <Loaded query={pending}>
        {(page) =>
          page.data.length === 0 ? (
            <p class="muted" role="status">
              No pending request.
            </p>
          ) : (
            page.data.map((request) => <KeyRequest key={request.id} request={request} />)
          )
        }
      </Loaded>
    </Page>
  )
}
