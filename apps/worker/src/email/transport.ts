import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Logger as PinoLogger } from 'pino'
import type { WorkerConfig } from '../env.ts'

export interface OutgoingEmail {
  to: string
  subject: string
  text: string
  html: string
  /** Used to name the .eml file when there is no SMTP server. */
  reference: string
}

export interface Mailer {
  send(email: OutgoingEmail): Promise<{ messageId: string }>
  close(): void
}

type Logger = Pick<PinoLogger, 'info'>

/**
 * Sends through SMTP_URL; without one (a development machine with no mail server) writes each
 * e-mail as an .eml file under MAIL_DIR and logs its path, so the service runs out of the box.
 */
export function createMailer(
  config: Pick<WorkerConfig, 'SMTP_URL' | 'MAIL_FROM' | 'MAIL_DIR'>,
  logger: Logger,
): Mailer {
  if (config.SMTP_URL) {
    const transport = nodemailer.createTransport(config.SMTP_URL)
    return {
      send: async ({ reference: _, ...email }) => {
        const info = await transport.sendMail({ from: config.MAIL_FROM, ...email })
        return { messageId: info.messageId }
      },
      close: () => transport.close(),
    }
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  return {
    send: async ({ reference, ...email }) => {
      const info = await transport.sendMail({ from: config.MAIL_FROM, ...email })
      await mkdir(config.MAIL_DIR, { recursive: true })
      const path = join(config.MAIL_DIR, `${new Date().toISOString().replace(/[:.]/g, '-')}-${reference}.eml`)
      await writeFile(path, info.message as Buffer)
      logger.info({ path, subject: email.subject }, 'no SMTP_URL: e-mail written to file')
      return { messageId: info.messageId }
    },
    close: () => transport.close(),
  }
}
