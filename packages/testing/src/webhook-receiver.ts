import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** One request a receiver got: the raw body, as its signature covers it. */
export interface ReceivedWebhook {
  path: string
  headers: IncomingHttpHeaders
  body: string
  /** `body` parsed, for the test's convenience (empty when it is not JSON). */
  json: { type: string; timestamp: string; data: Record<string, unknown> }
  receivedAt: number
}

/** How the receiver answers one request: a status and headers, or never (`hang`). */
export type ReceiverAnswer =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  | 'hang'

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`: the port survives a stop and a start. */
  url: string
  port: number
  received: ReceivedWebhook[]
  /** The same list as `received`. */
  requests: ReceivedWebhook[]
  /** TCP connections opened so far: fewer than requests means keep-alive worked. */
  connections: number
  /** Requests whose `webhook-id` is this event's. */
  deliveriesOf(eventId: string): ReceivedWebhook[]
  /** Decides each answer (default 204); `received` holds the request already. */
  answer: (request: ReceivedWebhook, index: number) => ReceiverAnswer
  /** The most requests that were in flight at once. */
  maxInFlight: number
  /** Closes the port: tries get "connection refused" until `start()`. */
  stop(): Promise<void>
  start(): Promise<void>
  close(): Promise<void>
}

/**
 * A local HTTP server that plays a sender's webhook receiver, keeping what it receives. It answers
 * as `answer` decides (default 204), or, given `respond`, lets that write each response itself (one
 * that never ends it leaves the sender hanging).
 */
export async function startWebhookReceiver(
  respond?: (webhook: ReceivedWebhook, res: ServerResponse) => void,
  options: { port?: number } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = []
  const sockets = new Set<Socket>()
  let inFlight = 0
  let server: Server | undefined
  const receiver: WebhookReceiver = {
    url: '',
    port: options.port ?? 0,
    received,
    requests: received,
    connections: 0,
    deliveriesOf: (eventId) => received.filter((r) => r.headers['webhook-id'] === eventId),
    answer: () => ({ status: 204 }),
    maxInFlight: 0,
    async stop() {
      const closing = server
      server = undefined
      if (!closing) return
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => closing.close(() => resolve()))
    },
    async start() {
      if (server) return
      server = createServer((req, res) => {
        inFlight++
        receiver.maxInFlight = Math.max(receiver.maxInFlight, inFlight)
        const chunks: Buffer[] = []
        req.on('data', (chunk: Buffer) => chunks.push(chunk))
        req.on('close', () => inFlight--)
        req.on('end', async () => {
          const body = Buffer.concat(chunks).toString('utf8')
          let json = { type: '', timestamp: '', data: {} } as ReceivedWebhook['json']
          try {
            json = JSON.parse(body)
          } catch {
            // Kept as received; the test sees the raw body.
          }
          const request = { path: req.url ?? '', headers: req.headers, body, json, receivedAt: Date.now() }
          received.push(request)
          if (respond) {
            respond(request, res)
            return
          }
          const answer = receiver.answer(request, received.length - 1)
          if (answer === 'hang') return
          if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs))
          if (!res.writable) return
          res.writeHead(answer.status, answer.headers)
          res.end(answer.body ?? '')
        })
      })
      server.on('connection', (socket) => {
        receiver.connections++
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
      })
      const listening = server
      await new Promise<void>((resolve) => listening.listen(receiver.port, '127.0.0.1', resolve))
      receiver.port = (listening.address() as AddressInfo).port
      receiver.url = `http://127.0.0.1:${receiver.port}`
    },
    close: () => receiver.stop(),
  }
  await receiver.start()
  return receiver
}
