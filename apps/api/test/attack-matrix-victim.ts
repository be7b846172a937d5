import type { WebhookReceiver } from '@dispatch/testing'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { png, upload } from './media/images.ts'
import { createChannel, createProduct, createProject, serials } from './orders/fixtures.ts'

/**
 * The attack matrix's victim, tenant `acme` (attack-matrix.test.ts): one of everything a key can
 * create, what of it no one else may ever see, and what acme itself reads of it.
 */

export const ACME = {
  textPhone: '+5511911110001',
  optOutPhone: '+5511911110002',
  /** Opted out by acme; evil erases this phone. */
  erasedByEvilPhone: '+5511911110003',
  erasurePhone: '+5511911110004',
  text: 'acme-secret-text Your code is 771204',
  scheduledText: 'acme-secret-scheduled Your table is ready at 8',
  clientReference: 'acme-ref-4481',
  optOutReason: 'acme-secret-reason asked by phone on 12 May',
  erasedReason: 'acme-secret-reason-2 complaint 5531',
  hookDescription: 'acme-secret-hook CRM relay',
  campaignName: 'acme-secret-campaign December promotion',
}

export const inject = (
  app: FastifyInstance,
  method: string,
  url: string,
  headers: Record<string, string>,
  payload?: unknown,
) =>
  app.inject({
    method: method as 'GET',
    url,
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  })

/** The answer's body when it has `status`; otherwise the setup fails, saying what. */
export async function ok(
  res: LightMyRequestResponse | Promise<LightMyRequestResponse>,
  status: number,
  what: string,
) {
  const answer = await res
  if (answer.statusCode !== status) throw new Error(`${what}: ${answer.statusCode} ${answer.body}`)
  return answer.json()
}

/** A session cookie (whatever its name) and its CSRF token, as a browser would send them back. */
export async function session(app: FastifyInstance, url: string, payload: object) {
  const res = await app.inject({ method: 'POST', url, payload })
  const body = await ok(res, 201, `sign-in at ${url}`)
  const cookie = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .map((c) => c.split(';')[0])
    .join('; ')
  return { cookie, 'x-csrf-token': body.csrfToken as string }
}

/** What a key creates: messages, a scheduled one, opt-outs, an endpoint, an erasure, an order, media. */
export async function createEverything(
  app: FastifyInstance,
  receiver: WebhookReceiver,
  key: string,
  tenantId: string,
) {
  const post = (path: string, payload: object, status: number) =>
    ok(
      inject(app, 'POST', `/api/third-party/${path}`, { 'x-api-key': key }, payload),
      status,
      `${tenantId} POST ${path}`,
    )
  const endpoint = await post(
    'webhook-endpoints',
    {
      url: `${receiver.url}/${tenantId}-hook`,
      events: ['message.sent', 'recipient.opted_in', 'recipient.opted_out'],
      description: ACME.hookDescription,
    },
    201,
  )
  const text = await post(
    'messages/send-text',
    { phone: ACME.textPhone, text: ACME.text, clientReference: ACME.clientReference },
    202,
  )
  const scheduled = await post(
    'messages/send-text',
    {
      phone: ACME.textPhone,
      text: ACME.scheduledText,
      sendAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
    202,
  )
  const batch = await post(
    'messages/batch',
    { messages: [{ type: 'text', phone: ACME.textPhone, text: ACME.text }] },
    202,
  )
  const optOut = await post('suppressions', { phone: ACME.optOutPhone, reason: ACME.optOutReason }, 201)
  const erasedOptOut = await post(
    'suppressions',
    { phone: ACME.erasedByEvilPhone, reason: ACME.erasedReason },
    201,
  )
  const erasure = await post('erasures', { phone: ACME.erasurePhone }, 202)
  const channel = await createChannel(app, { name: `Channel of ${tenantId}` })
  const project = await createProject(app, tenantId, channel.id, { name: `Project of ${tenantId}` })
  const kit = await createProduct(app, tenantId, channel.id, { name: `Kit of ${tenantId}` })
  const kitSerials = serials(1, `${tenantId}-SN`)
  const order = await post(
    'orders',
    {
      order: { projectId: project.id, channelId: channel.id },
      orderItems: [{ productId: kit.id, price: 2500, quantity: 1, kitSerials }],
    },
    201,
  )
  const media = await ok(
    upload(app, key, [['file', { bytes: png(3), filename: 'a.png', type: 'image/png' }]]),
    201,
    'upload',
  )
  const campaign = await createCampaign(app, key)
  return {
    campaign,
    endpoint,
    text,
    scheduled,
    batch,
    optOut,
    erasedOptOut,
    erasure,
    channel,
    project,
    kit,
    kitSerials,
    order,
    media,
  }
}

/** A campaign of the key's, with its audience in (one row taken, one skipped). */
async function createCampaign(app: FastifyInstance, key: string) {
  const row = await ok(
    inject(
      app,
      'POST',
      '/api/third-party/campaigns',
      { 'x-api-key': key },
      {
        name: ACME.campaignName,
        template: { templateId: 'order_shipped', language: 'pt_BR' },
      },
    ),
    201,
    'campaign',
  )
  const audience = await app.inject({
    method: 'PUT',
    url: `/api/third-party/campaigns/${row.id}/audience`,
    headers: { 'x-api-key': key, 'content-type': 'text/csv' },
    payload: `phone,1,2\n${ACME.textPhone},Ana,BR-1\n+1,bad,x\n`,
  })
  if (audience.statusCode !== 200)
    throw new Error(`campaign audience: ${audience.statusCode} ${audience.body}`)
  return row as { id: string }
}
export type Created = Awaited<ReturnType<typeof createEverything>>

/**
 * What of acme's no answer to another may show, by what it is; and acme's ids by the path
 * parameter (or the resource before `{id}`) they fill.
 */
export function acmeRecord(acme: Created, eventId: string, keyId: string) {
  const secrets: Record<string, unknown> = {
    "acme's key id": keyId,
    "acme's message id": acme.text.messageId,
    "acme's scheduled message id": acme.scheduled.messageId,
    "acme's batch id": acme.batch.batchId,
    "acme's batch message id": acme.batch.results?.[0]?.messageId,
    "acme's message text": ACME.text,
    "acme's scheduled text": ACME.scheduledText,
    "acme's client reference": ACME.clientReference,
    "acme's suppression id": acme.optOut.id,
    "acme's second suppression id": acme.erasedOptOut.id,
    "acme's opt-out reason": ACME.optOutReason,
    "acme's second opt-out reason": ACME.erasedReason,
    "acme's endpoint id": acme.endpoint.id,
    "acme's endpoint URL": acme.endpoint.url,
    "acme's endpoint description": ACME.hookDescription,
    "acme's endpoint secret": acme.endpoint.secret,
    "acme's erasure id": acme.erasure.id,
    "acme's order id": acme.order.id,
    "acme's order display id": acme.order.displayId,
    "acme's project id": acme.project.id,
    "acme's product id": acme.kit.id,
    "acme's kit serial": acme.kitSerials[0],
    "acme's media id": acme.media.mediaId,
    "acme's event id": eventId,
    "acme's campaign id": acme.campaign.id,
    "acme's campaign name": ACME.campaignName,
  }
  for (const [name, phone] of Object.entries(ACME).filter(([k]) => k.endsWith('Phone'))) {
    secrets[`acme's phone (${name})`] = phone
    secrets[`acme's phone (${name}, digits)`] = phone.slice(1)
  }
  // A value missing from an answer of acme's own would make its leak check pass whatever happens.
  const missing = Object.entries(secrets).filter(([, v]) => typeof v !== 'string' || v.length < 6)
  if (missing.length > 0) throw new Error(`acme's world lacks ${missing.map(([k]) => k).join(', ')}`)
  const phones = [ACME.textPhone, ACME.optOutPhone, ACME.erasedByEvilPhone]
  const ids: Record<string, string[]> = {
    messageId: [acme.text.messageId, acme.scheduled.messageId],
    orderId: [acme.order.id],
    mediaId: [acme.media.mediaId],
    eventId: [eventId],
    phone: phones,
    recipient: phones,
    'webhook-endpoints': [acme.endpoint.id],
    suppressions: [acme.optOut.id],
    erasures: [acme.erasure.id],
    campaignId: [acme.campaign.id],
    // Admin routes: any value reaches the credential check first.
    'api-keys': [keyId],
    senders: ['default'],
    'sender-pools': ['00000000-0000-4000-8000-000000000044'],
    messages: [acme.text.messageId],
    channels: [acme.channel.id],
    projects: [acme.project.id],
    products: [acme.kit.id],
    name: ['messages'],
  }
  return { secrets: secrets as Record<string, string>, ids }
}

/** What acme reads of what it created: nothing another does may change it. */
export async function acmeView(app: FastifyInstance, key: string, secrets: Record<string, string>) {
  const read = async (url: string) => {
    const res = await inject(app, 'GET', url, { 'x-api-key': key })
    return res.statusCode === 200 ? res.json() : `${res.statusCode}`
  }
  const [endpoint, optOut, erasedOptOut, scheduled, order, campaign] = await Promise.all([
    read(`/api/third-party/webhook-endpoints/${secrets["acme's endpoint id"]}`),
    read(`/api/third-party/suppressions/${secrets["acme's suppression id"]}`),
    read(`/api/third-party/suppressions/${secrets["acme's second suppression id"]}`),
    read(`/api/third-party/messages/${secrets["acme's scheduled message id"]}`),
    read(`/api/third-party/orders/${secrets["acme's order id"]}`),
    read(`/api/third-party/campaigns/${secrets["acme's campaign id"]}`),
  ])
  const pick = (v: unknown, keys: string[]) =>
    typeof v === 'object' && v
      ? Object.fromEntries(keys.map((k) => [k, (v as Record<string, unknown>)[k]]))
      : v
  return {
    'its endpoint': pick(endpoint, ['url', 'events', 'enabled', 'description']),
    'its opt-out': pick(optOut, ['recipient', 'reason', 'scope']),
    'its opt-out of the phone evil erased': pick(erasedOptOut, ['recipient', 'reason', 'scope']),
    'its scheduled message': pick(scheduled, ['status', 'phone']),
    'its order': JSON.stringify(order),
    'its campaign': pick(campaign, ['name', 'status', 'canceledAt', 'audience']),
  }
}
