import { errorTitle } from '@dispatch/contracts'
import type { ComponentChildren } from 'preact'
import { Link } from '../router.tsx'
import { channelName, fallbackStateShort } from './channel.ts'
import { ErrorTitle } from './error-code.tsx'
import { CopyButton, Id } from './id.tsx'
import { StatusBadge } from './status.tsx'
import { type Column, Table } from './table.tsx'
import { Time } from './time.tsx'

export interface MessageRow {
  messageId: string
  type: string
  phone?: string | null
  userId?: string | null
  status: string
  attempts: number
  clientReference?: string | null
  lastError?: { code: string; message: string } | null
  createdAt: string
  /** `sms` once its channel fallback's SMS went (docs/fallback.md); absent: WhatsApp's. */
  channel?: 'whatsapp' | 'sms'
  fallback?: { state: string; reason: string }
  apiKeyId?: string
  /** The key's client name (the admin list carries it). */
  clientName?: string
}

/** Who sent it: the client's name, its key's id under it. */
const keyColumn: Column<MessageRow> = {
  header: 'Key',
  cell: (row) => <Link href={`/keys/${row.apiKeyId}`}>{row.clientName ?? 'Key'}</Link>,
  detail: (row) => (row.apiKeyId ? <Id value={row.apiKeyId} copy="key id" /> : null),
}

/**
 * Messages as a table; each row links to the message's page. With no row it says what to do next:
 * under a search (`searched`), widen it; else `none` (there is no message yet).
 */
export function MessagesTable({
  rows,
  showKey = false,
  searched = true,
  none = 'No message yet.',
}: {
  rows: MessageRow[]
  showKey?: boolean
  searched?: boolean
  none?: ComponentChildren
}) {
  const columns: Column<MessageRow>[] = [
    {
      header: 'Message',
      cell: (row) => <Id value={row.messageId} />,
      aside: (row) => <CopyButton value={row.messageId} label={`message id ${row.messageId}`} />,
      detail: (row) => row.clientReference,
    },
    { header: 'To', cell: (row) => row.phone ?? row.userId ?? '—' },
    { header: 'Type', cell: (row) => row.type },
    { header: 'Status', cell: (row) => <StatusBadge status={row.status} /> },
    {
      header: 'Channel',
      cell: (row) => channelName(row.channel),
      // A fallback decided but not sent says what became of it.
      detail: (row) =>
        row.fallback && row.fallback.state !== 'sent' ? fallbackStateShort(row.fallback.state) : null,
    },
    { header: 'Attempts', cell: (row) => row.attempts },
    {
      header: 'Last error',
      cell: (row) => (row.lastError ? <code title={row.lastError.message}>{row.lastError.code}</code> : '—'),
      // What the code means in a few words, under it (a code Dispatch does not know: nothing more).
      // Not `wrap`: its break-word would split "Undeliverable" in a narrow window; words wrap whole.
      detail: (row) =>
        row.lastError && errorTitle(row.lastError.code) !== null ? (
          <ErrorTitle code={row.lastError.code} />
        ) : null,
    },
    ...(showKey ? [keyColumn] : []),
    { header: 'Accepted', cell: (row) => <Time at={row.createdAt} /> },
  ]
  // Full ids are wide: on a narrow window the table scrolls in its own box, not the page.
  return (
    <div class="table-scroll">
      <Table
        rows={rows}
        columns={columns}
        rowKey={(row) => row.messageId}
        rowLink={(row) => `/messages/${row.messageId}`}
        caption="Messages"
        empty={searched ? 'No message matches. Widen the time range or clear a filter.' : none}
      />
    </div>
  )
}
