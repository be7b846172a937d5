import type { SenderPoolView } from '@dispatch/contracts'
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../../api.ts'
import { Link } from '../../router.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { Pager } from '../../ui/pager.tsx'
import { Loaded, Outcome, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { type MemberDraft, PoolForm } from './pool-form.tsx'
import { useSenderOptions } from './sender-options.tsx'

type Member = SenderPoolView['members'][number]

/** In rotation, or out and why: what an admin looks at first when a number falls. */
function Rotation({ member }: { member: Member }) {
  return member.inRotation ? (
    <span class="badge badge-in_rotation">in rotation</span>
  ) : (
    <span class="badge badge-out_of_rotation">out: {member.outOfRotation?.replace(/_/g, ' ')}</span>
  )
}

type PoolDraft = { name: string; members: MemberDraft[] }

/** Every read of the pools (this page's, a key's choice of pool) reads again after a change. */
const usePoolsRefresh = () => {
  const client = useQueryClient()
  return () => client.invalidateQueries({ queryKey: ['sender-pools'] })
}

/** A pool's changes: its name and members (the whole ordered list), and deleting it. */
function PoolActions({ pool }: { pool: SenderPoolView }) {
  const senders = useSenderOptions()
  const refresh = usePoolsRefresh()
  const [editing, setEditing] = useState(false)
  const update = useMutation({
    mutationFn: (draft: PoolDraft) =>
      api.PATCH('/api/admin/sender-pools/{id}', {
        params: { path: { id: pool.id } },
        body: { name: draft.name, members: draft.members },
      }),
    onSuccess: async () => {
      setEditing(false)
      await refresh()
    },
  })
  const remove = useMutation({
    mutationFn: () => api.DELETE('/api/admin/sender-pools/{id}', { params: { path: { id: pool.id } } }),
    onSuccess: refresh,
  })
  return (
    <>
      {editing ? (
        <PoolForm
          label={`Change ${pool.name}`}
          senders={senders}
          initial={{
            name: pool.name,
            members: pool.members.map((m) => ({ senderId: m.senderId, weight: m.weight })),
          }}
          submitLabel="Save pool"
          pending={update.isPending}
          onSubmit={(draft) => update.mutate(draft)}
          onCancel={() => {
            setEditing(false)
            update.reset()
          }}
        />
      ) : (
        <div class="row tight">
          <button
            type="button"
            class="button secondary"
            onClick={() => {
              remove.reset()
              setEditing(true)
            }}
          >
            Change members
          </button>
          <button
            type="button"
            class="danger"
            disabled={remove.isPending}
            aria-label={`Delete pool ${pool.name}`}
            onClick={() => remove.mutate()}
          >
            Delete pool
          </button>
        </div>
      )}
      <Outcome mutation={update} done="Pool saved." />
      <Outcome mutation={remove} />
    </>
  )
}

/** A new pool: its name and members, all of one business. */
function NewPool() {
  const senders = useSenderOptions()
  const refresh = usePoolsRefresh()
  const [formKey, setFormKey] = useState(0)
  const create = useMutation({
    mutationFn: (draft: PoolDraft) => api.POST('/api/admin/sender-pools', { body: draft }),
    onSuccess: async () => {
      setFormKey((k) => k + 1)
      await refresh()
    },
  })
  return (
    <Section title="New pool">
      <PoolForm
        key={formKey}
        label="New pool"
        senders={senders}
        submitLabel="Create pool"
        pending={create.isPending}
        onSubmit={(draft) => create.mutate(draft)}
      />
      <Outcome mutation={create} done={create.data ? `Pool ${create.data.name} created.` : undefined} />
    </Section>
  )
}

function Pool({ pool }: { pool: SenderPoolView }) {
  const out = pool.members.filter((m) => !m.inRotation).length
  return (
    <Section title={pool.name}>
      <p class="muted">
        {pool.members.length} {pool.members.length === 1 ? 'number' : 'numbers'}, {out} out of rotation ·{' '}
        {pool.boundKeys} bound {pool.boundKeys === 1 ? 'key' : 'keys'} · portfolio{' '}
        <code>{pool.portfolio}</code>
      </p>
      <Table
        caption={`Members of ${pool.name}`}
        rows={pool.members}
        rowKey={(m) => m.senderId}
        columns={[
          { header: 'Sender', cell: (m) => <Link href={`/senders/${m.senderId}`}>{m.displayName}</Link> },
          { header: 'Weight', cell: (m) => m.weight },
          { header: 'Rotation', cell: (m) => <Rotation member={m} /> },
          { header: 'State', cell: (m) => <StatusBadge status={m.state} /> },
          { header: 'Quality', cell: (m) => m.health.qualityRating ?? '—' },
          { header: 'Account', cell: (m) => m.health.accountStatus ?? '—' },
          {
            // Judged when the members were written; a member's business changed since shows here.
            header: 'Portfolio',
            cell: (m) =>
              m.portfolio === pool.portfolio ? (
                <code>{m.portfolio}</code>
              ) : (
                <>
                  <code>{m.portfolio}</code> <strong>(not the pool's)</strong>
                </>
              ),
          },
        ]}
      />
      <PoolActions pool={pool} />
    </Section>
  )
}

/**
 * The sender pools (docs/sender-pools.md), each with its members in order and their health, to
 * change or delete; and a form for a new one. Keys are bound to a pool on the key's page.
 */
export function SenderPools() {
  const [page, setPage] = useState(1)
  const pools = useQuery({
    queryKey: ['sender-pools', 'list', page],
    queryFn: () => api.GET('/api/admin/sender-pools', { params: { query: paging(page, 10) } }),
    placeholderData: keepPreviousData,
  })
  return (
    <Page title="Sender pools">
      <Loaded query={pools}>
        {(result) =>
          result.data.length === 0 ? (
            <p class="muted">No sender pool yet: create one below.</p>
          ) : (
            <>
              {result.data.map((pool) => (
                <Pool key={pool.id} pool={pool} />
              ))}
              <Pager {...result} onPage={setPage} />
            </>
          )
        }
      </Loaded>
      <NewPool />
    </Page>
  )
}
