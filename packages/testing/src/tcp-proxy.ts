import net from 'node:net'

export interface TcpProxy {
  url(scheme: string): string
  /**
   * Drops every connection and refuses new ones: the service behind looks unreachable. With
   * `reset`, each open connection is reset (an RST, as a crashed or restarted server's peers see:
   * `read ECONNRESET`) rather than closed.
   */
  cut(options?: { reset?: boolean }): Promise<void>
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>
  /**
   * Holds what clients send, on open connections and new ones, while answers still come back: the
   * service looks slow (a command times out) but not gone. `flow()` passes what was held on.
   */
  stall(): void
  flow(): void
  /**
   * Holds the service's answers while what clients send still goes through: each
   * `releaseAnswers()` then passes on what was held (true when there was any), so a test counts the
   * round trips a client waits on one after the other. `flowAnswers()` passes everything on again.
   */
  holdAnswers(): void
  releaseAnswers(): boolean
  flowAnswers(): void
  close(): Promise<void>
}

/** A TCP proxy in front of a real service, so a test can make that service unreachable and back. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>()
  /** Each open connection's client side and the service side it sends to. */
  const pairs = new Map<net.Socket, net.Socket>()
  let stalled = false
  /** Answers held per client while `holdAnswers` is on; undefined while they flow. */
  let held: Map<net.Socket, Buffer[]> | undefined
  let port = 0
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => s.destroy())
    }
    pairs.set(client, upstream)
    upstream.on('data', (chunk: Buffer) => {
      if (!held) return void client.write(chunk)
      const chunks = held.get(client)
      if (chunks) chunks.push(chunk)
      else held.set(client, [chunk])
    })
    if (stalled) client.pause()
    else client.pipe(upstream)
    client.on('close', () => {
      pairs.delete(client)
      upstream.destroy()
    })
    upstream.on('close', () => client.destroy())
  })
  /** Passes on what `holdAnswers` held; true when there was any. */
  const releaseAnswers = () => {
    if (!held || held.size === 0) return false
    for (const [client, chunks] of held) for (const chunk of chunks) client.write(chunk)
    held.clear()
    return true
  }
  const listen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()))
  const stop = (options: { reset?: boolean } = {}) =>
    new Promise<void>((resolve) => {
      for (const s of sockets) {
        if (options.reset && !s.destroyed) s.resetAndDestroy()
        else s.destroy()
      }
      server.close(() => resolve())
    })
  await listen()
  port = (server.address() as net.AddressInfo).port
  return {
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    cut: stop,
    restore: listen,
    stall: () => {
      if (stalled) return
      stalled = true
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream)
        client.pause()
      }
    },
    flow: () => {
      if (!stalled) return
      stalled = false
      for (const [client, upstream] of pairs) client.pipe(upstream)
    },
    holdAnswers: () => {
      held ??= new Map()
    },
    releaseAnswers,
    flowAnswers: () => {
      releaseAnswers()
      held = undefined
    },
    close: async () => {
      if (server.listening) await stop()
    },
  }
}
