import type { ApiKeyAdminDetail } from '@dispatch/contracts'
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { integer, text } from '../../ui/format.ts'
import { Id } from '../../ui/id.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { Loaded, Outcome, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'

/** A field cleared in the form resets the limit to the service default (null). */
const orNull = <T,>(value: T | undefined): T | null => value ?? null

/** The quiet hours the form gives: none when both times are empty (the API judges a half-filled pair). */
function quietHoursOf(form: FormData) {
  const start = text(form, 'quietStart')
  const end = text(form, 'quietEnd')
  const timeZone = text(form, 'quietZone')
  if (!start && !end) return null
  return { start: start ?? '', end: end ?? '', ...(timeZone ? { timeZone } : {}) }
}

/** The sender pools, for a key's choice (the first 100, by name). */
function usePoolOptions() {
  return useQuery({
    queryKey: ['sender-pools', 'options'],
    queryFn: () =>
      api.GET('/api/admin/sender-pools', {
        params: { query: { page: 1, take: 100, order: 'ASC', orderField: 'name' } },
      }),
  })
}

/** A pool's name, linked to the pools page (its id until the pools are read). */
function PoolName({ id }: { id: string }) {
  const pool = usePoolOptions().data?.data.find((p) => p.id === id)
  return <Link href="/sender-pools">{pool?.name ?? id}</Link>
}

/**
 * The pool the key sends through (docs/sender-pools.md): binding one moves a key whose sender is not
 * a member to the pool's first member; unbinding leaves the key on its sender.
 */
function PoolBinding({ apiKey }: { apiKey: ApiKeyAdminDetail }) {
  const client = useQueryClient()
  const pools = usePoolOptions()
  const list = pools.data?.data ?? []
  const bound = list.find((pool) => pool.id === apiKey.senderPoolId)
  const bind = useMutation({
    mutationFn: (senderPoolId: string | null) =>
      api.PATCH('/api/admin/api-keys/{id}', { params: { path: { id: apiKey.id } }, body: { senderPoolId } }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: ['api-keys'] }),
        client.invalidateQueries({ queryKey: ['sender-pools'] }),
      ]),
  })
  return (
    <Section title="Sender pool">
      <p>
        {apiKey.senderPoolId === null ? (
          'Not bound to a pool: the key sends through its own sender.'
        ) : (
          <>
            Bound to <Link href="/sender-pools">{bound?.name ?? apiKey.senderPoolId}</Link>
            {bound ? ` (${bound.members.map((m) => m.displayName).join(', ')})` : ''}: each recipient gets one
            of its numbers. The key's own sender must stay one of them.
          </>
        )}
      </p>
      <form
        class="row"
        aria-label="Sender pool"
        onSubmit={(event) => {
          event.preventDefault()
          bind.mutate(text(new FormData(event.currentTarget), 'senderPoolId') ?? null)
        }}
      >
        <label>
          Pool
          <select name="senderPoolId" key={apiKey.senderPoolId ?? 'none'}>
            <option value="">None</option>
            {list.map((pool) => (
              <option key={pool.id} value={pool.id} selected={pool.id === apiKey.senderPoolId}>
                {pool.name} ({pool.portfolio})
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={bind.isPending}>
          Save pool
        </button>
        {apiKey.senderPoolId === null ? null : (
          <button
            type="button"
            class="button secondary"
            disabled={bind.isPending}
            onClick={() => bind.mutate(null)}
          >
            Unbind
          </button>
        )}
      </form>
      <Outcome
        mutation={bind}
        done={bind.variables === null ? 'Unbound from its pool.' : 'Bound to the pool.'}
      />
    </Section>
  )
}

/** One key: who asked, its decisions, its limits (editable), its usage today, and revoking it. */
export function KeyDetail({ id }: { id: string }) {
  const client = useQueryClient()
  const senders = useSenderOptions()
  const key = useQuery({
    queryKey: ['api-keys', 'detail', id],
    queryFn: () => api.GET('/api/admin/api-keys/{id}', { params: { path: { id } } }),
  })
  const refresh = () => client.invalidateQueries({ queryKey: ['api-keys'] })
  const limits = useMutation({
    mutationFn: (form: FormData) =>
      api.PATCH('/api/admin/api-keys/{id}', {
        params: { path: { id } },
        body: {
          senderId: orNull(text(form, 'senderId')),
          ratePerSecond: orNull(integer(form, 'ratePerSecond')),
          dailyQuota: orNull(integer(form, 'dailyQuota')),
          transactional: form.get('transactional') === 'on',
          quietHours: quietHoursOf(form),
        },
      }),
    onSuccess: refresh,
  })
  const revoke = useMutation({
    mutationFn: (reason: string | undefined) =>
      api.POST('/api/admin/api-keys/{id}/revoke', {
        params: { path: { id } },
        body: reason ? { reason } : {},
      }),
    onSuccess: refresh,
  })
  return (
    <Page title="Key">
      <p>
        <Link href="/keys">All keys</Link>
      </p>
      <Loaded query={key}>
        {(data) => {
          return (
            <>
              <dl class="facts">
                <dt>Client</dt>
                <dd>{data.clientName}</dd>
                <dt>Id</dt>
                <dd>
                  <Id value={data.id} copy="key id" />
                </dd>
                <dt>E-mail</dt>
                <dd>{data.email}</dd>
                <dt>Status</dt>
                <dd>
                  <StatusBadge status={data.status} /> {data.statusReason ?? ''}
                </dd>
                <dt>Prefix</dt>
                <dd>
                  <code>{data.keyPrefix}</code>
                </dd>
                <dt>Tenant</dt>
                <dd>
                  {data.tenantId ?? 'none'} (asked for {data.requestedTenantId ?? 'none'})
                </dd>
                <dt>Scopes</dt>
                <dd>{data.scopes.join(', ')}</dd>
                <dt>Usage today</dt>
                <dd>
                  {data.usage.today} accepted
                  {data.usage.remainingToday === null ? '' : `, ${data.usage.remainingToday} left`} (resets{' '}
                  <Time at={data.usage.resetsAt} />)
                </dd>
                <dt>Sender pool</dt>
                <dd>{data.senderPoolId === null ? 'none' : <PoolName id={data.senderPoolId} />}</dd>
                <dt>Messages</dt>
                <dd>
                  <Link href={`/messages?apiKeyId=${data.id}`}>This key’s messages</Link>
                </dd>
              </dl>
              <PoolBinding apiKey={data} />
              <Section title="Limits">
                {data.senderPoolId === null ? null : (
                  <p class="muted">
                    Bound to a pool: the sender must be one of its members (unbind it first to choose
                    another).
                  </p>
                )}
                <form
                  class="row"
                  aria-label="Limits"
                  onSubmit={(event) => {
                    event.preventDefault()
                    limits.mutate(new FormData(event.currentTarget))
                  }}
                >
                  <label>
                    Sender
                    <select name="senderId">
                      <option value="">Default</option>
                      {senders.map((sender) => (
                        <option key={sender.id} value={sender.id} selected={sender.id === data.senderId}>
                          {sender.displayName}
                        </option>
                      ))}
                    </select>
                  </label>
                  <label>
                    Rate per second
                    <input
                      name="ratePerSecond"
                      type="number"
                      min="1"
                      defaultValue={data.ratePerSecond?.toString() ?? ''}
                    />
                  </label>
                  <label>
                    Daily quota
                    <input
                      name="dailyQuota"
                      type="number"
                      min="1"
                      defaultValue={data.dailyQuota?.toString() ?? ''}
                    />
                  </label>
                  <fieldset>
                    <legend>Quiet hours (the recipient's local time; empty: none)</legend>
                    <div class="row tight">
                      <label>
                        From
                        <input name="quietStart" type="time" defaultValue={data.quietHours?.start ?? ''} />
                      </label>
                      <label>
                        Until
                        <input name="quietEnd" type="time" defaultValue={data.quietHours?.end ?? ''} />
                      </label>
                      <label>
                        Zone when the recipient's is unknown
                        <input
                          name="quietZone"
                          placeholder="UTC"
                          defaultValue={data.quietHours?.timeZone ?? ''}
                        />
                      </label>
                    </div>
                  </fieldset>
                  <label class="check">
                    <input name="transactional" type="checkbox" defaultChecked={data.transactional} />
                    Transactional
                  </label>
                  <button type="submit" disabled={limits.isPending}>
                    Save limits
                  </button>
                </form>
                <Outcome mutation={limits} done="Limits saved." />
              </Section>
              {data.status === 'approved' ? (
                <Section title="Revoke">
                  <form
                    class="row"
                    aria-label="Revoke"
                    onSubmit={(event) => {
                      event.preventDefault()
                      revoke.mutate(text(new FormData(event.currentTarget), 'reason'))
                    }}
                  >
                    <label>
                      Reason for revoking
                      <input name="reason" />
                    </label>
                    <button type="submit" class="danger" disabled={revoke.isPending}>
                      Revoke key
                    </button>
                  </form>
                  <Outcome mutation={revoke} done="Key revoked." />
                </Section>
              ) : null}
              <Section title="Decision history">
                <Table
                  rows={data.history}
                  rowKey={(entry, index) => `${entry.createdAt}-${index}`}
                  columns={[
                    { header: 'When', cell: (entry) => <Time at={entry.createdAt} /> },
                    { header: 'Who', cell: (entry) => entry.actor },
                    {
                      header: 'Change',
                      cell: (entry) => (
                        <>
                          {entry.fromStatus === entry.toStatus
                            ? 'edited'
                            : `${entry.fromStatus} → ${entry.toStatus}`}
                          {entry.changes ? <code class="wrap"> {JSON.stringify(entry.changes)}</code> : null}
                        </>
                      ),
                    },
                    { header: 'Reason', cell: (entry) => entry.reason ?? '—' },
                  ]}
                />
              </Section>
            </>
          )
        }}
      </Loaded>
    </Page>
  )
}
