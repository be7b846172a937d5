import type { SenderPoolView } from '@dispatch/contracts'
import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../../api.ts'
import { Link } from '../../router.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { Pager } from '../../ui/pager.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'

type Member = SenderPoolView['members'][number]

/** In rotation, or out and why: what an admin looks at first when a number falls. */
function Rotation({ member }: { member: Member }) {
  return member.inRotation ? (
    <span class="badge badge-in_rotation">in rotation</span>
  ) : (
    <span class="badge badge-out_of_rotation">out: {member.outOfRotation?.replace(/_/g, ' ')}</span>
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
        ]}
      />
    </Section>
  )
}

/** The sender pools (docs/sender-pools.md), each with its members in order and their health. */
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
            <p class="muted">No sender pool yet: create one with POST /api/admin/sender-pools.</p>
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
    </Page>
  )
}
