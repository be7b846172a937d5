import {
  type ApiKeyEmailData,
  type EmailOutboxPayload,
  type EmailTemplate,
  ORDER_EMAIL_TEMPLATES,
  type OrderEmailTemplate,
} from '@dispatch/contracts'
import type { Draft } from './draft.ts'
import { orderDrafts } from './order-templates.ts'

export interface RenderedEmail {
  subject: string
  text: string
  html: string
}

export const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  )
/** Client names are the requester's text: keep them to one line in a subject. */
export const oneLine = (s: string) => s.replace(/[\r\n\t]+/g, ' ').trim()

const drafts: Record<EmailTemplate, (d: ApiKeyEmailData) => Draft> = {
  'api-key.approved': (d) => ({
    subject: `Your Dispatch API key for ${oneLine(d.clientName)} is approved`,
    paragraphs: [
      `Good news: the API key ${d.keyPrefix}… requested for ${d.clientName} has been approved.`,
      'It works from now on. Send it in the x-api-key header of each request, and keep it secret.',
    ],
  }),
  'api-key.rejected': (d) => ({
    subject: `Your Dispatch API key request for ${oneLine(d.clientName)} was rejected`,
    paragraphs: [
      `The API key ${d.keyPrefix}… requested for ${d.clientName} has been rejected and will not work.`,
      `Reason: ${d.reason ?? 'none given'}`,
      'You can request a new key once the reason has been addressed.',
    ],
  }),
  'api-key.revoked': (d) => ({
    subject: `Your Dispatch API key for ${oneLine(d.clientName)} was revoked`,
    paragraphs: [
      `The API key ${d.keyPrefix}… of ${d.clientName} has been revoked. Requests made with it are refused from now on.`,
      ...(d.reason ? [`Reason: ${d.reason}`] : []),
      'If you still need access, request a new key.',
    ],
  }),
}

type OrderEmail = Extract<EmailOutboxPayload, { template: OrderEmailTemplate }>
const isOrderEmail = (email: EmailOutboxPayload): email is OrderEmail =>
  (ORDER_EMAIL_TEMPLATES as readonly string[]).includes(email.template)

type WebhookEndpointEmail = Extract<EmailOutboxPayload, { template: 'webhook-endpoint.disabled' }>

function webhookEndpointDisabled({ data: d }: WebhookEndpointEmail): Draft {
  return {
    subject: `A Dispatch webhook endpoint of ${oneLine(d.clientName)} was disabled`,
    paragraphs: [
      `The webhook endpoint ${d.url} (${d.endpointId}) no longer receives events.`,
      d.reason === 'gone'
        ? 'It answered 410 Gone, which says the endpoint no longer exists.'
        : `Every delivery to it has failed since ${d.failingSince ?? 'a while'}.`,
      'Once it works again, enable it (PATCH with {"enabled": true}) and replay the events you missed (POST …/replay with {"since": …}). Every attempt is listed under …/attempts.',
    ],
  }
}

type SenderAlertEmail = Extract<EmailOutboxPayload, { template: 'sender.needs-attention' }>

function senderNeedsAttention({ data: d }: SenderAlertEmail): Draft {
  return {
    subject: `Dispatch sender ${oneLine(d.displayName)} needs attention: deliveries paused`,
    paragraphs: [
      `The platform refused the access token of the sender ${d.displayName} (phone number id ${d.phoneNumberId}, sender ${d.senderId}): ${d.code} ${d.reason}`,
      'Its deliveries are paused: its messages wait, each within its validity, instead of failing. Other senders are not affected.',
      `Set a valid token (PATCH /api/admin/senders/${d.senderId} with {"accessToken": …}; for the default sender, WHATSAPP_ACCESS_TOKEN and a worker restart) and its deliveries resume at once.`,
    ],
  }
}

type SenderAccountEmail = Extract<EmailOutboxPayload, { template: 'sender.account-alert' }>

function senderAccountAlert({ data: d }: SenderAccountEmail): Draft {
  return {
    subject: `Dispatch sender ${oneLine(d.displayName)}: WhatsApp account ${oneLine(d.accountStatus)}`,
    paragraphs: [
      `Meta reports the WhatsApp Business Account of the sender ${d.displayName} (phone number id ${d.phoneNumberId}, sender ${d.senderId}) as ${d.accountStatus}: ${d.reason}`,
      'Messages through this sender are likely to fail until Meta lifts it. Its health is shown at GET /api/admin/senders/' +
        `${d.senderId}; the keys bound to it received a sender.updated event.`,
      'Check the account in WhatsApp Manager (Account quality) for what Meta asks, and appeal there if it is a mistake.',
    ],
  }
}

export function renderEmail(email: EmailOutboxPayload): RenderedEmail {
  const { subject, paragraphs } =
    email.template === 'webhook-endpoint.disabled'
      ? webhookEndpointDisabled(email)
      : email.template === 'sender.needs-attention'
        ? senderNeedsAttention(email)
        : email.template === 'sender.account-alert'
          ? senderAccountAlert(email)
          : isOrderEmail(email)
            ? orderDrafts[email.template](email.data)
            : drafts[email.template](email.data)
  return {
    subject,
    text: `${paragraphs.join('\n\n')}\n\n— Dispatch\n`,
    html: `<!doctype html><html><body>${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}<p>— Dispatch</p></body></html>`,
  }
}
