import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'

const CHILD = fileURLToPath(new URL('./postgres-type-fetch-loss-child.ts', import.meta.url))

function runChild(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD], {
      env: { ...process.env, DATABASE_URL: inject('postgresUrl') },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

describe("a Postgres connection reset while it reads the array types (a new connection's first query)", () => {
  it('fails the waiting query at most, and leaves the process and its pool working', async () => {
    const { code, stdout, stderr } = await runChild()
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ reset: true, after: 1 })
    expect(['answered', 'ECONNRESET', 'CONNECTION_CLOSED']).toContain(result.first)
  })
})
