import type { OrderEmailData, OrderEmailTemplate } from '@dispatch/contracts'
import type { Draft } from './draft.ts'

const lines = (d: OrderEmailData) =>
  d.items.map(
    (i) =>
      `${i.quantity} × ${i.productName} at ${i.price}${i.kitSerials.length ? ` (kit serials: ${i.kitSerials.join(', ')})` : ''}`,
  )

/** The `order.created` e-mails: one to the partner (the project's address), one to BME. */
export const orderDrafts: Record<OrderEmailTemplate, (d: OrderEmailData) => Draft> = {
  'order.created.partner': (d) => ({
    subject: `Your order ${d.displayId} for ${d.projectName} is registered`,
    paragraphs: [
      `We have registered order ${d.displayId} for project ${d.projectName} on ${d.orderedAt}.`,
      ...lines(d),
      `Total: ${d.total}`,
      'We will let you know when it ships.',
    ],
  }),
  'order.created.bme': (d) => ({
    subject: `New order ${d.displayId} (${d.channelName}, tenant ${d.tenantId})`,
    paragraphs: [
      `Order ${d.displayId} was registered on ${d.orderedAt} for project ${d.projectName} of tenant ${d.tenantId}${d.partnerName ? ` by ${d.partnerName}` : ''}.`,
      ...lines(d),
      `Total: ${d.total}`,
    ],
  }),
}
