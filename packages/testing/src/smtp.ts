import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface TestSmtpServer {
  url: string
  messages: ParsedMail[]
  /** The messages accepted so far for this recipient. */
  messagesTo(address: string): ParsedMail[]
  /** Answers the next `count` messages with this SMTP status (e.g. 451 transient, 550 permanent). */
  failNext(count: number, code: number): void
  close(): Promise<void>
}

const recipients = (mail: ParsedMail) =>
  (Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : []).flatMap((a) => a.value.map((v) => v.address))

/** A real SMTP server, in process, that keeps every message it accepts, parsed. */
export async function startSmtpServer(): Promise<TestSmtpServer> {
  const messages: ParsedMail[] = []
  let failures = { count: 0, code: 451 }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      if (failures.count > 0) {
        failures = { ...failures, count: failures.count - 1 }
        stream.resume()
        stream.on('end', () => {
          const error = Object.assign(new Error('test server refuses this message'), {
            responseCode: failures.code,
          })
          callback(error)
        })
        return
      }
      simpleParser(stream)
        .then((mail) => {
          messages.push(mail)
          callback()
        })
        .catch(callback)
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    messagesTo: (address) => messages.filter((m) => recipients(m).includes(address)),
    failNext: (count, code) => {
      failures = { count, code }
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
