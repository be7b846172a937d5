import { toStorableText } from '@dispatch/contracts'

// Other routes refuse text Postgres cannot store (NUL, unpaired surrogates); the platform's webhook
// must acknowledge it instead, so its strings are replaced with U+FFFD by the same rule.

/**
 * The parsed JSON with every string, keys included, made storable. Walks with an explicit stack,
 * in place: a signed body may nest deeper than the call stack allows.
 */
export function toStorableJson(root: unknown): unknown {
  if (typeof root === 'string') return toStorableText(root)
  const pending: object[] = []
  if (root !== null && typeof root === 'object') pending.push(root)
  for (let node = pending.pop(); node; node = pending.pop()) {
    const record = node as Record<string, unknown>
    for (const key of Object.keys(record)) {
      const value = record[key]
      const clean = typeof value === 'string' ? toStorableText(value) : value
      if (clean !== null && typeof clean === 'object') pending.push(clean)
      const cleanKey = Array.isArray(record) ? key : toStorableText(key)
      if (cleanKey !== key) delete record[key]
      // defineProperty, not assignment: a `__proto__` key stays plain data.
      if (cleanKey !== key || clean !== value) {
        Object.defineProperty(record, cleanKey, {
          value: clean,
          enumerable: true,
          writable: true,
          configurable: true,
        })
      }
    }
  }
  return root
}
