import net from 'node:net'

export interface RawResponse {
  statusCode: number
  headers: Record<string, string>
  body: string
}

/**
 * Sends bytes exactly as given to a listening server, over a raw socket, and reads one HTTP
 * answer: for requests no HTTP client would send (a NUL in a header, a bad Content-Length, an
 * unknown method), read until the server closes the connection (send `Connection: close` with a
 * request the server accepts). Fails if the server closes without answering, or answers nothing
 * in `timeoutMs`.
 */
export function rawRequest(port: number, bytes: string | Buffer, timeoutMs = 5000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes))
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(String(bytes).slice(0, 60))}`))
    }, timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {}) // a reset after the answer is read like a close
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('utf8')
      const split = text.indexOf('\r\n\r\n')
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)
      if (split < 0 || !status) {
        reject(
          new Error(
            `no HTTP answer to ${JSON.stringify(String(bytes).slice(0, 60))}: ${JSON.stringify(text)}`,
          ),
        )
        return
      }
      const headers: Record<string, string> = {}
      for (const line of text.slice(0, split).split('\r\n').slice(1)) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      resolve({ statusCode: Number(status[1]), headers, body: text.slice(split + 4) })
    })
  })
}
