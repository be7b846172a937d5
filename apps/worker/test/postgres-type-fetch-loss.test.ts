import { describe, expect, it } from 'vitest'
import { runChild } from './run-child.ts'

describe("a Postgres connection reset while it reads the array types (a new connection's first query)", () => {
  it('fails the waiting query at most, and leaves the process and its pool working', async () => {
    const { code, stdout, stderr } = await runChild('postgres-type-fetch-loss-child.ts')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ reset: true, after: 1 })
    expect(['answered', 'ECONNRESET', 'CONNECTION_CLOSED']).toContain(result.first)
  })
})
