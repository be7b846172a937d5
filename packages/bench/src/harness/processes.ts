/**
 * The service's own entry points as the scaling benchmark runs them: `apps/api/src/server.ts` and
 * `apps/worker/src/main.ts`, each started with `node` in a process of its own, as deployed.
 */
import { ENTRY_POINTS, freePort, type LogLine, type Service, startService, waitFor } from '@dispatch/testing'
import { processCpuSeconds } from './cpu.ts'

export interface ServiceProcess {
  name: string
  /** The API's base URL; empty for a worker. */
  url: string
  /** Its process id, for what /proc tells of it (resident memory, `residentBytes`). */
  pid: number | undefined
  /** CPU time so far (user + system), in seconds. */
  cpuSeconds(): Promise<number>
  /** SIGTERM, as an orchestrator stops it; SIGKILL if it has not exited 20 s later. */
  stop(): Promise<void>
}

/** Every process started here and not yet stopped, for `stopAllServices` (Ctrl-C, a failed run). */
const running = new Set<ServiceProcess>()

export const stopAllServices = () => Promise.all([...running].map((p) => p.stop()))

/** Log lines of level warn and above go to this process's stderr, named. */
const warnings = (name: string) => (line: LogLine) => {
  if (typeof line.level === 'number' && line.level >= 40)
    process.stderr.write(`[${name}] ${JSON.stringify(line)}\n`)
}

/** Waits until `ready()` answers; a process that exits or fails first is stopped and says why. */
async function started(
  service: Service,
  url: string,
  ready: () => Promise<boolean>,
): Promise<ServiceProcess> {
  const wrapped: ServiceProcess = {
    name: service.name,
    url,
    pid: service.child.pid,
    cpuSeconds: async () => (await processCpuSeconds(service.child.pid)) ?? Number.NaN,
    async stop() {
      running.delete(wrapped)
      await service.stop()
    },
  }
  running.add(wrapped)
  try {
    await waitFor(
      async () => {
        if (!service.running()) throw new Error(`${service.name} exited while starting\n${service.stderr()}`)
        return ready()
      },
      { what: `${service.name} to start`, timeoutMs: 90_000, intervalMs: 100 },
    )
  } catch (error) {
    await wrapped.stop()
    throw error
  }
  return wrapped
}

/** `node apps/api/src/server.ts` on a free port; resolves once it listens. */
export async function startApiProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort()
  const service = startService(
    name,
    ENTRY_POINTS.api,
    { ...env, HOST: '127.0.0.1', PORT: String(port) },
    { inheritEnv: true, onLine: warnings(name) },
  )
  const url = `http://127.0.0.1:${port}`
  return started(service, url, () =>
    fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    ),
  )
}

/**
 * `node apps/worker/src/main.ts`; resolves once it logs `messages worker started` (its lanes are
 * up and hold whatever switch is on). Its log lines of level warn and above go to stderr.
 */
export async function startWorkerProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const service = startService(
    name,
    ENTRY_POINTS.worker,
    { ...env, LOG_LEVEL: 'info' },
    { inheritEnv: true, onLine: warnings(name) },
  )
  const logged = (text: string) => service.logs().some((line) => line.msg === text)
  return started(service, '', async () => logged('messages worker started'))
}
