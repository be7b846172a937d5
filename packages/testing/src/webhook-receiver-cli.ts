/**
 * A tiny webhook receiver, the one docs/webhooks.md walks through: it checks each delivery's
 * Standard Webhooks signature with the `standardwebhooks` package and prints the event.
 *
 *   WEBHOOK_SECRET=whsec_… pnpm webhook:receiver      # listens on 127.0.0.1:4020 (RECEIVER_PORT)
 */
import { createServer } from 'node:http'
import { Webhook } from 'standardwebhooks'
import { webhookReceiverEnv } from './env.ts'

const { port, secret } = webhookReceiverEnv()
const verifier = secret ? new Webhook(secret) : undefined
const seen = new Set<string>()

const server = createServer((req, res) => {
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (chunk: string) => {
    body += chunk
  })
  req.on('end', () => {
    const id = String(req.headers['webhook-id'])
    try {
      // Throws unless one of the signatures is ours and the timestamp is within 5 minutes.
      verifier?.verify(body, req.headers as Record<string, string>)
    } catch (error) {
      console.log(`✗ ${id}: refused, ${(error as Error).message}`)
      res.writeHead(401).end()
      return
    }
    const { type, timestamp, data } = JSON.parse(body)
    const again = seen.has(id) ? '  (again: same webhook-id)' : ''
    seen.add(id)
    const what = data.text ?? data.error?.code ?? ''
    console.log(
      `${verifier ? '✓' : '?'} ${timestamp}  ${type.padEnd(17)} #${data.sequence}  message ${data.messageId}` +
        `${data.clientReference ? `  ref ${data.clientReference}` : ''}${what ? `  ${JSON.stringify(what)}` : ''}${again}`,
    )
    res.writeHead(204).end()
  })
})

server.listen(port, '127.0.0.1', () => {
  console.log(`Webhook receiver on http://127.0.0.1:${port}`)
  console.log(
    verifier
      ? 'Checking signatures with WEBHOOK_SECRET (✓ verified).'
      : 'WEBHOOK_SECRET is unset: printing events without checking their signatures (?).',
  )
})
const stop = () => server.close(() => process.exit(0))
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
