import type { EmailOutboxPayload, Order, OrderEmailData } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import type { Executor } from './executor.ts'

/** The order's e-mails as outbox rows in its own transaction: sent only if it commits. */
export async function queueOrderEmails(
  tx: Executor,
  order: Order,
  channel: { sendPartnerEmail: boolean; sendBmeEmail: boolean; name: string },
  partnerEmail: string | null,
  /** The order's time and where the BME copy goes (createOrder's input: only what the e-mails need). */
  input: { bmeEmail: string; now: Date },
) {
  const data: OrderEmailData = {
    orderId: order.id,
    displayId: order.displayId,
    orderedAt: order.orderedAt,
    total: order.total,
    projectName: order.project.name,
    channelName: channel.name,
    partnerName: order.partnerName,
    tenantId: order.tenantId,
    items: order.orderItems.map((i) => ({
      productName: i.product.name,
      quantity: i.quantity,
      price: i.price,
      kitSerials: i.kitSerials,
    })),
  }
  const emails: EmailOutboxPayload[] = []
  if (channel.sendPartnerEmail && partnerEmail)
    emails.push({ to: partnerEmail, template: 'order.created.partner', data })
  if (channel.sendBmeEmail) emails.push({ to: input.bmeEmail, template: 'order.created.bme', data })
  if (emails.length === 0) return
  await tx.insert(outbox).values(emails.map((payload) => ({ topic: 'email', payload, createdAt: input.now })))
  await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
}
