import { Link } from '../router.tsx'
import { formatTime } from './format.ts'
import { StatusBadge } from './status.tsx'

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
  apiKeyId?: string
}

/** Messages as a table; each row links to the message's page. */
export function MessagesTable({ rows, showKey = false }: { rows: MessageRow[]; showKey?: boolean }) {
  if (rows.length === 0) return <p class="muted">No message matches.</p>
  return (
    <table>
      <caption class="visually-hidden">Messages</caption>
      <thead>
        <tr>
          <th scope="col">Message</th>
          <th scope="col">To</th>
          <th scope="col">Type</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Last error</th>
          {showKey ? <th scope="col">Key</th> : null}
          <th scope="col">Accepted</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.messageId}>
            <td>
              <Link href={`/messages/${row.messageId}`}>{row.messageId.slice(0, 8)}</Link>
              {row.clientReference ? <div class="muted">{row.clientReference}</div> : null}
            </td>
            <td>{row.phone ?? row.userId ?? '—'}</td>
            <td>{row.type}</td>
            <td>
              <StatusBadge status={row.status} />
            </td>
            <td>{row.attempts}</td>
            <td>{row.lastError ? <code title={row.lastError.message}>{row.lastError.code}</code> : '—'}</td>
            {showKey ? (
              <td>
                <Link href={`/keys/${row.apiKeyId}`}>{row.apiKeyId?.slice(0, 8)}</Link>
              </td>
            ) : null}
            <td>{formatTime(row.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
