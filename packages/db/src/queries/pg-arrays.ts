/**
 * A Postgres array literal of `values` (`{"a","b",NULL}`), for a `::text[]` parameter cast in SQL:
 * a statement that takes each column of many rows as one array stays the same whatever the number of
 * rows, so it is prepared once, and nothing depends on how the client serializes arrays.
 */
export function arrayLiteral(values: ReadonlyArray<string | number | null>): string {
  const items = values.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/[\\"]/g, '\\$&')}"`))
  return `{${items.join(',')}}`
}
