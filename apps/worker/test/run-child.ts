import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'

/** Runs a child script of this folder against the test database; its exit code and output. */
export function runChild(name: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(`./${name}`, import.meta.url))], {
      env: { ...process.env, DATABASE_URL: inject('postgresUrl') },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}
