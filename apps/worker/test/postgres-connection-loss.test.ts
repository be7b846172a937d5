import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'

const CHILD = fileURLToPath(new URL('./postgres-connection-loss-child.ts', import.meta.url))

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

describe('a Postgres connection cut in the middle of a transaction', () => {
  it('rejects the transaction and leaves the process and its pool working', async () => {
    const { code, stdout, stderr } = await runChild()
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toEqual({ error: 'CONNECTION_CLOSED', after: 1 })
  })
})
