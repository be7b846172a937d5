/**
 * One bash for one page: its commands run in it one after another, as a reader pastes them into a
 * terminal, so variables and functions carry from command to command. `curl` is wrapped to keep the
 * HTTP status of each call (`-D`), which the docs' promises name and `curl -s` does not print.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Ran {
  /** The HTTP status of the command's last curl, if it made one. */
  status?: number
  output: string
  stderr: string
  exitCode: number
}

export class Shell {
  private readonly bash: ChildProcessWithoutNullStreams
  private readonly dir: string
  private stdout = ''
  private count = 0
  private waiting?: () => void

  /** A bash in `cwd` with `env`; its scratch files live in a directory of its own. */
  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.dir = mkdtempSync(join(tmpdir(), 'walkthrough-shell-'))
    this.bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
    this.bash.stdout.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString('utf8')
      this.waiting?.()
    })
    this.bash.stderr.on('data', () => {})
    this.bash.once('exit', () => this.waiting?.())
    const headers = join(this.dir, 'headers')
    this.bash.stdin.write(
      [
        `__walk_headers=${JSON.stringify(headers)}`,
        // Every curl also writes its response headers (the status line first) where the runner reads them.
        'curl() { command curl -D "$__walk_headers" "$@"; }',
        '',
      ].join('\n'),
    )
  }

  /** Runs one command; resolves when it has ended, or rejects after `timeoutMs`. */
  async run(command: string, timeoutMs = 60_000): Promise<Ran> {
    const n = ++this.count
    const out = join(this.dir, `out-${n}`)
    const err = join(this.dir, `err-${n}`)
    const headers = join(this.dir, 'headers')
    writeFileSync(headers, '')
    const done = `__walk_done_${n}`
    this.bash.stdin.write(
      `{\n${command}\n} >${JSON.stringify(out)} 2>${JSON.stringify(err)} </dev/null\necho "${done} $?"\n`,
    )
    const deadline = Date.now() + timeoutMs
    let exitCode: number | undefined
    while (exitCode === undefined) {
      const match = new RegExp(`${done} (\\d+)\\n`).exec(this.stdout)
      if (match) {
        exitCode = Number(match[1])
        this.stdout = this.stdout.slice((match.index ?? 0) + match[0].length)
        break
      }
      if (this.bash.exitCode !== null)
        throw new Error(`the shell exited (${this.bash.exitCode}) during the command`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`the command did not end within ${timeoutMs / 1000} s`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000))
        this.waiting = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    const statuses = [...readFileSync(headers, 'utf8').matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)]
    const last = statuses.at(-1)?.[1]
    return {
      ...(last ? { status: Number(last) } : {}),
      output: readFileSync(out, 'utf8'),
      stderr: readFileSync(err, 'utf8'),
      exitCode,
    }
  }

  close() {
    this.bash.stdin.end()
    if (this.bash.exitCode === null) this.bash.kill('SIGKILL')
    rmSync(this.dir, { recursive: true, force: true })
  }
}
