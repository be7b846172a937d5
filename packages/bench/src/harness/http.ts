import { Agent, request } from 'node:http'

/**
 * A lean keep-alive GET client (lighter than fetch), so the client's own cost stays out of a figure.
 * One connection unless told more (`maxSockets`: requests made at once, as a browser's page makes them).
 */
export function keepAliveGet({ maxSockets = 1 } = {}) {
  const agent = new Agent({ keepAlive: true, maxSockets })
  const get = (url: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(url, { agent, headers }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    })
  return { get, close: () => agent.destroy() }
}
