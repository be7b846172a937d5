import { graphError, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ACCESS_TOKEN, createDeliveryWorld, type DeliveryWorld, PHONE_NUMBER_ID, text } from './world.ts'

let world: DeliveryWorld
let worker: Awaited<ReturnType<DeliveryWorld['startWorker']>>
beforeAll(async () => {
  world = await createDeliveryWorld()
  // One at a time, so scripted answers meet the message they are meant for. The platform timeout is
  // short for the timeout case, yet long enough that a loaded CI machine's first call (once 300 ms
  // was not) does not time out after the fake answered, and send again.
  worker = await world.startWorker({ MESSAGES_CONCURRENCY: '1', PLATFORM_TIMEOUT_MS: '1500' })
})
afterAll(async () => {
  await world?.close()
})

const settled = (id: string) =>
  waitFor(
    async () => {
      const row = await world.message(id)
      return row && (row.status === 'sent' || row.status === 'failed') ? row : undefined
    },
    { what: `message ${id} to be sent or failed`, timeoutMs: 10_000 },
  )
const requestsFor = (id: string) => world.fake.requests.filter((r) => r.messageId === id)

describe('the WhatsApp Cloud API adapter sends exactly the expected JSON', () => {
  it('text', async () => {
    const tricky = 'Hello, "Ana" \\ {1,2} NULL — ação 🎉'
    const id = await world.enqueue(text(tricky))
    const row = await settled(id)
    const [request] = requestsFor(id)
    expect(request?.path).toBe(`/v21.0/${PHONE_NUMBER_ID}/messages`)
    expect(request?.headers.authorization).toBe(`Bearer ${ACCESS_TOKEN}`)
    expect(request?.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '5511987654321',
      biz_opaque_callback_data: id,
      type: 'text',
      text: { preview_url: false, body: tricky },
    })
    // The record keeps the body exactly, quotes, braces and all.
    expect(row?.payload).toEqual({ phone: '+5511987654321', text: tricky })
    expect(row).toMatchObject({
      status: 'sent',
      attempts: 1,
      platform_message_id: request?.platformMessageId,
    })
    expect(row?.sent_at).toBeInstanceOf(Date)
  })

  it('image, with its caption', async () => {
    const id = await world.enqueue({
      type: 'image',
      body: { phone: '+14155550123', image: { mediaId: '1479537139650973', text: 'Your invoice' } },
    })
    await settled(id)
    expect(requestsFor(id)[0]?.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '14155550123',
      biz_opaque_callback_data: id,
      type: 'image',
      image: { id: '1479537139650973', caption: 'Your invoice' },
    })
  })

  it('template with a header image, two body variables and a URL button', async () => {
    const id = await world.enqueue({
      type: 'template',
      body: {
        phone: '+5511987654321',
        templateId: 'order_shipped',
        language: 'pt_BR',
        variables: { '2': 'BR-1042', '1': 'Ana' },
        headerVariables: [{ type: 'image', value: null, originalMediaId: '2342543534' }],
        buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
      },
    })
    await settled(id)
    expect(requestsFor(id)[0]?.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '5511987654321',
      biz_opaque_callback_data: id,
      type: 'template',
      template: {
        name: 'order_shipped',
        language: { code: 'pt_BR' },
        components: [
          { type: 'header', parameters: [{ type: 'image', image: { id: '2342543534' } }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: 'BR-1042' },
            ],
          },
          {
            type: 'button',
            sub_type: 'url',
            index: '0',
            parameters: [{ type: 'text', text: 'track/BR-1042' }],
          },
        ],
      },
    })
  })

  it('template with named variables and no header or buttons', async () => {
    const id = await world.enqueue({
      type: 'template',
      body: {
        phone: '+5511987654321',
        templateId: 'welcome',
        language: 'en',
        variables: { first_name: 'Ana' },
      },
    })
    await settled(id)
    expect((requestsFor(id)[0]?.body as { template?: unknown } | undefined)?.template).toEqual({
      name: 'welcome',
      language: { code: 'en' },
      components: [
        { type: 'body', parameters: [{ type: 'text', parameter_name: 'first_name', text: 'Ana' }] },
      ],
    })
  })
})

describe('failures, classified', () => {
  it('retries a 500 and then delivers: sent, two attempts', async () => {
    world.fake.script({ status: 500, body: { error: { message: 'Internal error', code: 1 } } })
    const id = await world.enqueue(text())
    const row = await settled(id)
    expect(requestsFor(id)).toHaveLength(2)
    expect(row).toMatchObject({ status: 'sent', attempts: 2, last_error_code: '1' })
  })

  it('retries a timeout', async () => {
    world.fake.script({ status: 200, body: {}, delayMs: 4000 })
    const id = await world.enqueue(text())
    const row = await settled(id)
    expect(row).toMatchObject({ status: 'sent', attempts: 2, last_error_code: 'TIMEOUT' })
  })

  it('does not retry 131026: failed after one attempt, with the platform error', async () => {
    world.fake.script(graphError(131026, 'Message undeliverable'))
    const id = await world.enqueue(text())
    const row = await settled(id)
    expect(requestsFor(id)).toHaveLength(1)
    expect(row).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error_code: '131026',
      last_error_message: 'Message undeliverable',
      platform_message_id: null,
    })
    expect(row?.failed_at).toBeInstanceOf(Date)
  })

  it('stores what the platform answers safely: a NUL or a lone surrogate becomes U+FFFD, never a stuck record', async () => {
    world.fake.script(graphError(131026, 'bad\u0000 \ud800 answer'))
    const failed = await world.enqueue(text())
    world.fake.script({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.\u0000\udfff' }] },
    })
    const sent = await world.enqueue(text())
    world.fake.script({ status: 400, body: { error: { code: 'not a number', message: { nested: true } } } })
    const odd = await world.enqueue(text())
    expect(await settled(failed)).toMatchObject({
      status: 'failed',
      last_error_code: '131026',
      last_error_message: 'bad\uFFFD \uFFFD answer',
    })
    expect(await settled(sent)).toMatchObject({ status: 'sent', platform_message_id: 'wamid.\uFFFD\uFFFD' })
    expect(await settled(odd)).toMatchObject({ status: 'failed', last_error_code: 'HTTP_400' })
  })

  it('fails another 4xx at once too, and an unknown 400 without a code', async () => {
    world.fake.script(graphError(132001, 'Template name does not exist in the translation'))
    const first = await world.enqueue(text())
    world.fake.script({ status: 400, body: 'not json' })
    const second = await world.enqueue(text())
    expect(await settled(first)).toMatchObject({ status: 'failed', attempts: 1, last_error_code: '132001' })
    expect(await settled(second)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error_code: 'HTTP_400',
    })
  })

  it('429 with Retry-After pauses delivery for that long, spends no attempt, and still delivers', async () => {
    world.fake.script({ ...graphError(130429, 'Rate limit hit', 429), headers: { 'retry-after': '1' } })
    const id = await world.enqueue(text())
    const row = await settled(id)
    const [limited, accepted] = requestsFor(id)
    expect(row).toMatchObject({ status: 'sent', attempts: 1 })
    expect(accepted).toBeDefined()
    // The platform asked for a second; the next try waited at least that (less a little clock slack).
    const gap = (accepted?.receivedAt ?? 0) - (limited?.receivedAt ?? 0)
    expect(gap).toBeGreaterThanOrEqual(900)
  })

  it('a number that stays rate limited is paused longer each time, not hammered every pause', async () => {
    // 130429 with Retry-After 0.2 s for three seconds: pauses of 0.2, 0.4, 0.8, 1.6 s make about five
    // tries; a fixed pause would make about fifteen.
    world.fake.number(PHONE_NUMBER_ID, {
      answer: { ...graphError(130429, '(#130429) Rate limit hit'), headers: { 'retry-after': '0.2' } },
    })
    const id = await world.enqueue(text())
    await new Promise((resolve) => setTimeout(resolve, 3000))
    world.fake.number(PHONE_NUMBER_ID, { answer: undefined })
    const refused = requestsFor(id).length
    expect(refused).toBeGreaterThanOrEqual(3)
    expect(refused).toBeLessThanOrEqual(7)
    expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 1 })
    // One warning per pause, never more than the refusals.
    const pauses = worker.logs.lines.filter(
      (line) => line.includes(id) && line.includes('platform rate limit; pausing this sender'),
    )
    expect(pauses.length).toBeLessThanOrEqual(refused)
  })

  it('131056 (pair rate) delays only that message, spends no attempt, and the next message does not wait for it', async () => {
    world.fake.script({
      ...graphError(131056, '(#131056) Pair rate limit hit'),
      headers: { 'retry-after': '2' },
    })
    const paired = await world.enqueue(text('to a busy recipient'))
    await waitFor(() => requestsFor(paired).length > 0 || undefined, { what: 'the first try' })
    const other = await world.enqueue(text('to anyone else'))
    expect(await settled(other)).toMatchObject({ status: 'sent' })
    // The other message went out while the paired one was still waiting its turn.
    expect(requestsFor(paired)).toHaveLength(1)
    const row = await settled(paired)
    expect(row).toMatchObject({ status: 'sent', attempts: 1 })
    const [limited, accepted] = requestsFor(paired)
    expect((accepted?.receivedAt ?? 0) - (limited?.receivedAt ?? 0)).toBeGreaterThanOrEqual(1900)
  })

  it('code 190 (token refused) pauses the sender: the message waits, the sender needs attention, an alert; fixed, it goes out', async () => {
    world.fake.script(graphError(190, 'Error validating access token: Session has expired', 401))
    const id = await world.enqueue(text())
    const sender = await waitFor(
      async () => {
        const [row] = await world.sql`select state, state_reason from senders where id = 'default'`
        return row?.state === 'needs_attention' ? row : undefined
      },
      { what: 'the default sender to need attention' },
    )
    expect(sender.state_reason).toMatch(/^190: Error validating access token/)
    // Not failed, not retried: it waits in the paused queue, no attempt spent.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(requestsFor(id)).toHaveLength(1)
    expect((await world.message(id))?.status ?? 'queued').not.toBe('failed')
    const job = await world.queue.getJob(id)
    expect(await job?.getState()).toBe('waiting')
    expect(job?.attemptsMade).toBe(0)
    expect(await world.queue.isPaused()).toBe(true)
    const alert = worker.logs.lines
      .map((line) => JSON.parse(line))
      .find((line) => line.alert === 'platform-token-expired')
    expect(alert?.level).toBe(50)
    expect(worker.logs.text()).not.toContain(ACCESS_TOKEN)

    // An admin sets it active again (as PATCH /api/admin/senders/default does): delivery resumes.
    await world.sql`update senders set state = 'active', state_reason = null where id = 'default'`
    await world.announceSenderChange('default')
    expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 1, sender_id: 'default' })
    expect(await world.queue.isPaused()).toBe(false)
  })

  it('a malformed job fails without delivery, and the worker goes on with the next one', async () => {
    await world.queue.add('text', { messageId: 'not-a-uuid', nonsense: true } as never, {
      jobId: 'malformed-1',
    })
    const id = await world.enqueue(text())
    await settled(id)
    const job = await world.queue.getJob('malformed-1')
    expect(await job?.getState()).toBe('failed')
    expect(job?.attemptsMade).toBe(1)
  })

  it('a job a newer version wrote (a field this worker does not know) is left for a newer worker, not failed, and goes once one takes it', async () => {
    const id = await world.enqueue(text(), undefined, { fromTheFuture: 1 } as never)
    const job = await world.queue.getJob(id)
    // Put back, unsent and unspent: delayed, no attempt made, nothing sent, no record.
    await waitFor(async () => (await job?.getState()) === 'delayed', { timeoutMs: 10_000 })
    expect((await world.queue.getJob(id))?.attemptsMade).toBe(0)
    expect(requestsFor(id)).toEqual([])
    expect(await world.message(id)).toBeUndefined()
    // A worker that knows the field (here: the job as it would read it) takes it: sent once.
    const waiting = await world.queue.getJob(id)
    if (!waiting) throw new Error(`job ${id} is gone`)
    const { fromTheFuture: _, ...known } = waiting.data as unknown as Record<string, unknown>
    await waiting.updateData(known as never)
    await waiting.promote()
    expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 1 })
    expect(requestsFor(id)).toHaveLength(1)
  })
})
