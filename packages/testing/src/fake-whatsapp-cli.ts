/**
 * The tests' fake WhatsApp Cloud API as a standalone server, to try the `whatsapp-cloud` adapter
 * without a Meta account:
 *
 *   pnpm fake:whatsapp            # listens on 127.0.0.1:4010 (FAKE_WHATSAPP_PORT)
 *
 * With WHATSAPP_APP_SECRET set, it also plays Meta's webhooks: each accepted message is reported
 * `delivered`, then `read`, signed, to FAKE_WEBHOOK_URL (default: the local API's webhook).
 *
 * And it plays a customer answering, once, then exits:
 *
 *   pnpm fake:reply +5511987654321 "Tuesday works"   # a text from that phone to the business number
 *   pnpm fake:reply +5511987654321 --location -23.56,-46.65 "Office"   # or a button tap, a photo…
 *   pnpm fake:reply BR.1502576394655843 --username ana "hi"           # from a user known by username
 *
 * Its number belongs to a demo WhatsApp Business Account (FAKE_WABA_ID, default 102290129340398)
 * with a few templates (`order_shipped` pt_BR, `appointment_reminder` en_US, …): a sync reads them,
 * and template sends it does not know are refused as Meta refuses them (132001, 132000). Meta
 * changing one's status, and telling the API by webhook:
 *
 *   pnpm fake:template-status order_shipped pt_BR PAUSED "Low quality"
 *
 * FAKE_UNDELIVERABLE (phones, comma-separated) plays recipients not on WhatsApp: 131026.
 */
import { fakeWhatsAppEnv } from './env.ts'
import { REPLY_USAGE, sendFakeReply } from './fake-reply.ts'
import { templateStatusWebhook } from './whatsapp-business-webhooks.ts'
import { type CloudApiRequest, signWebhook, startFakeWhatsApp, statusWebhook } from './whatsapp-server.ts'
import { demoTemplates, type FakeTemplate } from './whatsapp-templates.ts'

const { port, webhookUrl, appSecret, phoneNumberId: PHONE_NUMBER_ID, wabaId: WABA_ID } = fakeWhatsAppEnv()

if (process.argv[2] === 'template-status') {
  const [name, language, event, ...reason] = process.argv.slice(3)
  if (!name || !language || !event) {
    console.error(
      'usage: pnpm fake:template-status <name> <language> <EVENT> [reason]   (EVENT: APPROVED, PAUSED, REJECTED, DISABLED…)',
    )
    process.exit(2)
  }
  const res = await fetch(`http://127.0.0.1:${port}/_fake/templates/${WABA_ID}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name,
      language,
      event: event.toUpperCase(),
      reason: reason.join(' ') || undefined,
    }),
  }).catch((error: Error) => {
    console.error(
      `could not reach the fake on port ${port} (is pnpm fake:whatsapp running?): ${error.message}`,
    )
    process.exit(1)
  })
  console.log(`${name} (${language}) → ${event.toUpperCase()}: ${res.status} ${await res.text()}`)
  process.exit(res.ok ? 0 : 1)
}

if (process.argv[2] === 'reply') {
  if (!appSecret || process.argv.length < 4) {
    console.error(REPLY_USAGE)
    process.exit(2)
  }
  try {
    const fakeUrl = `http://127.0.0.1:${port}`
    console.log(
      await sendFakeReply(process.argv.slice(3), {
        phoneNumberId: PHONE_NUMBER_ID,
        webhookUrl,
        appSecret,
        fakeUrl,
      }),
    )
    process.exit(0)
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${REPLY_USAGE}`)
    process.exit(1)
  }
}

/** What Meta would charge: a template at its category's rate, a reply within the window free. */
function pricingOf(request: CloudApiRequest) {
  const name = (request.body.template as { name?: string } | undefined)?.name
  const template = demoTemplates().find((t) => t.name === name)
  return template
    ? { billable: true, pricing_model: 'PMP', category: template.category.toLowerCase(), type: 'regular' }
    : { billable: false, pricing_model: 'PMP', category: 'service', type: 'free_customer_service' }
}

async function report(request: CloudApiRequest, status: 'delivered' | 'read') {
  if (!appSecret) return
  const body = JSON.stringify(
    statusWebhook({
      id: request.platformMessageId,
      status,
      timestamp: String(Math.floor(Date.now() / 1000)),
      ...(request.body.to === undefined ? {} : { recipient_id: request.body.to }),
      ...(request.body.recipient === undefined ? {} : { recipient_user_id: request.body.recipient }),
      biz_opaque_callback_data: request.messageId,
      pricing: pricingOf(request),
    }),
  )
  try {
    const res = await fetch(webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, appSecret) },
      body,
    })
    console.log(`  webhook ${status} → ${res.status}`)
  } catch (error) {
    console.log(`  webhook ${status} failed: ${(error as Error).message}`)
  }
}

/** Tells the API a template changed, as Meta does (`message_template_status_update`). */
async function reportTemplate(template: FakeTemplate, event: string, reason: string | undefined) {
  if (!appSecret) return
  const body = JSON.stringify(
    templateStatusWebhook(WABA_ID, { ...template, event, ...(reason ? { reason } : {}) }),
  )
  try {
    const res = await fetch(webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, appSecret) },
      body,
    })
    console.log(`  webhook message_template_status_update ${template.name} ${event} → ${res.status}`)
  } catch (error) {
    console.log(`  webhook message_template_status_update failed: ${(error as Error).message}`)
  }
}

/** Recipients not on WhatsApp (FAKE_UNDELIVERABLE): answered 131026. */
const undeliverable = new Set(fakeWhatsAppEnv().undeliverable)

const fake = await startFakeWhatsApp({
  port,
  undeliverable: (to) => undeliverable.has(to.replace(/^\+/, '')),
  onTemplateStatus: (_waba, template, event, reason) => void reportTemplate(template, event, reason),
  onAccepted: (request) => {
    const to = request.body.to === undefined ? `user ${request.body.recipient}` : `+${request.body.to}`
    console.log(`accepted ${request.body.type} to ${to} → ${request.platformMessageId}`)
    setTimeout(() => void report(request, 'delivered'), 500)
    setTimeout(() => void report(request, 'read'), 1500)
  },
})
fake.templates.set(WABA_ID, demoTemplates())
fake.templates.link(PHONE_NUMBER_ID, WABA_ID)
console.log(`Fake WhatsApp Cloud API on ${fake.url}. Run the API and the worker with:
  WHATSAPP_API_URL=${fake.url} WHATSAPP_ACCESS_TOKEN=fake-token WHATSAPP_PHONE_NUMBER_ID=${PHONE_NUMBER_ID}
Its number's WhatsApp Business Account is ${WABA_ID}, with ${demoTemplates().length} templates to sync.`)
console.log(
  appSecret
    ? `Reporting delivered/read to ${webhookUrl}, signed with WHATSAPP_APP_SECRET.`
    : 'Set WHATSAPP_APP_SECRET (the same as the API) to have it report delivered/read by webhook.',
)
process.once('SIGINT', () => void fake.close().then(() => process.exit(0)))
process.once('SIGTERM', () => void fake.close().then(() => process.exit(0)))
