import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One webhook a receiver got. */
export interface ReceivedWebhook {
  path: string
  headers: IncomingHttpHeaders
  /** The raw body, as the signature covers it. */
  body: string
  /** When it arrived (ms since the epoch). */
  receivedAt: number
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`. */
  url: string
  port: number
  requests: ReceivedWebhook[]
  /** TCP connections opened so far: fewer than requests means keep-alive worked. */
  connections: number
  close(): Promise<void>
}

/**
 * A customer's webhook endpoint on loopback. `answer` writes each response (default: 204); one that
 * never ends the response leaves the sender hanging.
 */
export async function startWebhookReceiver(
  answer: (webhook: ReceivedWebhook, res: ServerResponse) => void = (_, res) => res.writeHead(204).end(),
): Promise<WebhookReceiver> {
  const requests: ReceivedWebhook[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const webhook = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      }
      requests.push(webhook)
      answer(webhook, res)
    })
  })
  const receiver = { requests, connections: 0 }
  server.on('connection', () => receiver.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      // Senders keep sockets alive: close them, or close() would wait for them.
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  })
}
