import type { ComponentChildren } from 'preact'
import { Link } from '../router.tsx'

export interface Column<Row> {
  header: string
  cell: (row: Row) => ComponentChildren
  /** A muted line under the cell (a message's client reference, a queue's kind). */
  detail?: (row: Row) => ComponentChildren
  /** Beside the cell, outside its link (a copy button: a button cannot sit inside a link). */
  aside?: (row: Row) => ComponentChildren
  /** The cells' class: `wrap` for long text such as URLs and errors. */
  class?: string
}

interface TableProps<Row> {
  rows: Row[]
  columns: Column<Row>[]
  /** What tells rows apart across renders (an id). */
  rowKey: (row: Row, index: number) => string
  /** Shown instead of the table when there is no row; without it an empty table shows its headers. */
  empty?: ComponentChildren
  /** Named for screen readers (visually hidden) when the page gives the table no heading of its own. */
  caption?: string
  /** The row's page: its first cell links there (a row without one shows its first cell as is). */
  rowLink?: (row: Row) => string | null | undefined
}

/** Every table of the console and the portal: a header per column, a row per item. */
export function Table<Row>({ rows, columns, rowKey, empty, caption, rowLink }: TableProps<Row>) {
  if (rows.length === 0 && empty !== undefined) return <p class="muted">{empty}</p>
  return (
    <table>
      {caption ? <caption class="visually-hidden">{caption}</caption> : null}
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.header} scope="col">
              {column.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, index) => (
          <tr key={rowKey(row, index)}>
            {columns.map((column, at) => {
              const href = at === 0 ? rowLink?.(row) : undefined
              const detail = column.detail?.(row)
              return (
                <td key={column.header} class={column.class}>
                  {href ? <Link href={href}>{column.cell(row)}</Link> : column.cell(row)}
                  {column.aside ? <> {column.aside(row)}</> : null}
                  {detail ? <div class="muted">{detail}</div> : null}
                </td>
              )
            })}
          </tr>
        ))}
      </tbody>
    </table>
  )
}
