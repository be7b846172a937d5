import net from 'node:net'

export interface TcpProxy {
  url(scheme: string): string
  /** Drops every connection and refuses new ones: the service behind looks unreachable. */
  cut(): Promise<void>
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>
  close(): Promise<void>
}

/** A TCP proxy in front of a real service, so a test can make that service unreachable and back. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>()
  let port = 0
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => s.destroy())
    }
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  const listen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()))
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  await listen()
  port = (server.address() as net.AddressInfo).port
  return {
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    cut: stop,
    restore: listen,
    close: async () => {
      if (server.listening) await stop()
    },
  }
}
