/**
 * A Postgres array literal of `values` (`{"a","b",NULL}`), for a `::text[]` parameter cast in SQL:
 * a statement that takes each column of many rows as one array stays the same whatever the number of
 * rows, so it is prepared once, and nothing depends on how the client serializes arrays.
 */
export function arrayLiteral(values: ReadonlyArray<string | number | null>): string {
  // One string built in one pass, escaping only what needs it: the writers call this for every
  // column of every row they batch (half the CPU of a map, a replace on each value and a join).
  let literal = '{'
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (i > 0) literal += ','
    if (value === null || value === undefined) literal += 'NULL'
    else {
      const text = String(value)
      literal += NEEDS_ESCAPE.test(text) ? `"${text.replace(ESCAPED, '\\$&')}"` : `"${text}"`
    }
  }
  return `${literal}}`
}

const NEEDS_ESCAPE = /[\\"]/
const ESCAPED = /[\\"]/g
