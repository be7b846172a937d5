import { describe, expect, it } from 'vitest'
import { runChild } from './run-child.ts'

describe('a Postgres connection cut in the middle of a transaction', () => {
  it('rejects the transaction and leaves the process and its pool working', async () => {
    const { code, stdout, stderr } = await runChild('postgres-connection-loss-child.ts')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toEqual({ error: 'CONNECTION_CLOSED', after: 1 })
  })
})
