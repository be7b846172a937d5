import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { waitFor } from './wait.ts'

const run = promisify(execFile)

/** A Redis Cluster of this process's own, from the machine's `redis-server` binary. */
export interface LocalRedisCluster {
  /** The client ports of every node (masters first, as created; a failover swaps roles). */
  ports: number[]
  /** A seed URL (the first master): with REDIS_CLUSTER=true, the service finds the others. */
  url: string
  /** Every master's URL, for a client that wants them all as seeds. */
  urls: string[]
  /** Kills one node at once (SIGKILL), as a crash would. */
  kill(port: number): Promise<void>
  /** Kills every node and removes its files. Safe to call twice. */
  stop(): Promise<void>
}

/**
 * What a local cluster needs and this machine lacks (`redis-server`, `redis-cli` on the PATH:
 * Debian's `redis-server` package), or undefined when both are there.
 */
export function redisClusterMissing(): string | undefined {
  const missing = ['redis-server', 'redis-cli'].filter((binary) => {
    try {
      execFileSync(binary, ['--version'], { stdio: 'ignore' })
      return false
    } catch {
      return true
    }
  })
  return missing.length > 0 ? `${missing.join(' and ')} not found on the PATH` : undefined
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** `count` client ports whose cluster bus ports (port + 10000) are free too. */
async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = []
  for (let attempt = 0; ports.length < count; attempt++) {
    if (attempt > 200) throw new Error('no free ports for a Redis Cluster')
    const port = 20_000 + Math.floor(Math.random() * 35_000)
    if (ports.includes(port) || ports.includes(port + 10_000) || ports.includes(port - 10_000)) continue
    if ((await portFree(port)) && (await portFree(port + 10_000))) ports.push(port)
  }
  return ports
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])
  return stdout
}

/**
 * Starts `masters` Redis servers in cluster mode on free local ports, with `replicas` replicas
 * each, joins them with `redis-cli --cluster create`, and waits until every node says
 * `cluster_state:ok`. Nothing is written to disk but the nodes' cluster config, in a temporary
 * folder removed by `stop`. A master's failure is noticed after 2 s (`cluster-node-timeout`).
 */
export async function startRedisCluster({ masters = 3, replicas = 0 } = {}): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'dispatch-redis-cluster-'))
  const ports = await freePorts(masters * (1 + replicas))
  const nodes: ChildProcess[] = []
  let stopped = false
  // A process that exits without stopping the cluster (a test that failed in setup) takes it along.
  const orphans = () => {
    for (const node of nodes) node.kill('SIGKILL')
  }
  process.once('exit', orphans)
  const stop = async () => {
    if (stopped) return
    stopped = true
    process.off('exit', orphans)
    await Promise.all(
      nodes.map(
        (node) =>
          new Promise<void>((resolve) => {
            if (node.exitCode !== null || node.signalCode !== null) return resolve()
            node.once('exit', () => resolve())
            node.kill('SIGKILL')
          }),
      ),
    )
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (const port of ports) {
      const node = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--protected-mode',
          'no',
        ],
        { stdio: 'ignore' },
      )
      nodes.push(node)
    }
    for (const port of ports) {
      await waitFor(async () => (await cli(port, 'ping').catch(() => '')).trim() === 'PONG', {
        what: `Redis node on port ${port}`,
        timeoutMs: 10_000,
      })
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ])
    for (const port of ports) {
      await waitFor(async () => (await cli(port, 'cluster', 'info')).includes('cluster_state:ok'), {
        what: `the cluster to be ok on port ${port}`,
        timeoutMs: 20_000,
      })
    }
    if (replicas > 0) {
      // Replicas attach a moment after the cluster is ok: wait until each follows a live master.
      const attached = async () => {
        const nodes = await cli(ports[0] as number, 'cluster', 'nodes')
        const slaves = nodes.split('\n').filter((line) => / slave /.test(line))
        if (slaves.length < masters * replicas) return false
        const links = await Promise.all(
          slaves.map((line) => {
            const port = Number(/:(\d+)@/.exec(line)?.[1])
            return cli(port, 'info', 'replication')
          }),
        )
        return links.every((info) => info.includes('master_link_status:up'))
      }
      await waitFor(attached, {
        what: 'every replica to follow its master',
        timeoutMs: 20_000,
        intervalMs: 100,
      })
    }
  } catch (error) {
    await stop()
    throw error
  }
  const urls = ports.map((port) => `redis://127.0.0.1:${port}`)
  const kill = async (port: number) => {
    const node = nodes[ports.indexOf(port)]
    if (!node || node.exitCode !== null || node.signalCode !== null) return
    await new Promise<void>((resolve) => {
      node.once('exit', () => resolve())
      node.kill('SIGKILL')
    })
  }
  return { ports, url: urls[0] as string, urls, kill, stop }
}
