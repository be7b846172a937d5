import { isTwilioSignature } from '@dispatch/runtime/sms'
import { DROP_AFTER_TAKING, type FakeSms, startFakeSms, twilioError } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxSmsProvider } from '../../src/platforms/sms/sandbox.ts'
import { createTwilioSmsProvider } from '../../src/platforms/sms/twilio.ts'
import { SmsProviderError } from '../../src/platforms/sms/types.ts'

const CALLBACK = 'https://dispatch.example.com/webhooks/sms/status'
let fake: FakeSms
const provider = () =>
  createTwilioSmsProvider({
    apiUrl: fake.url,
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    from: '+15005550006',
    statusCallbackUrl: CALLBACK,
    timeoutMs: 2000,
  })
const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('the send succeeded'),
    (error: unknown) => error as SmsProviderError,
  )

beforeAll(async () => {
  fake = await startFakeSms()
})
afterAll(() => fake.close())

describe('the Twilio SMS provider', () => {
  it('posts the form Twilio takes, with basic auth, and keeps the sid it answers', async () => {
    const accepted = await provider().send({
      messageId: 'm-1',
      to: '+4915112345678',
      text: 'Your code: 1234',
    })
    expect(accepted.providerMessageId).toMatch(/^SM[0-9a-f]{32}$/)
    expect(accepted.status).toBe('queued')
    const [request] = fake.sentTo('+4915112345678')
    expect(request?.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Messages.json`)
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(request?.params).toEqual({
      To: '+4915112345678',
      From: '+15005550006',
      Body: 'Your code: 1234',
      StatusCallback: CALLBACK,
    })
  })

  it('sends through a Messaging Service instead of a number when one is set', async () => {
    const viaService = createTwilioSmsProvider({
      apiUrl: fake.url,
      accountSid: fake.accountSid,
      authToken: fake.authToken,
      from: '+15005550006',
      messagingServiceSid: 'MG0123456789abcdef0123456789abcdef',
      timeoutMs: 2000,
    })
    const accepted = await viaService.send({ messageId: 'm-2', to: '+4915100000002', text: 'hi' })
    expect(accepted.status).toBe('accepted')
    const [request] = fake.sentTo('+4915100000002')
    expect(request?.params.MessagingServiceSid).toBe('MG0123456789abcdef0123456789abcdef')
    expect(request?.params.From).toBeUndefined()
    expect(request?.params.StatusCallback).toBeUndefined()
  })

  it('classifies refusals: a bad number is final, 429 waits, wrong credentials need ops, a 5xx is unknown', async () => {
    fake.script(
      twilioError(21211, "The 'To' number +1555 is not a valid phone number."),
      twilioError(20429, 'Too Many Requests', 429),
      twilioError(20500, 'Internal Server Error', 500),
    )
    const send = () => provider().send({ messageId: 'm-3', to: '+4915100000003', text: 'x' })
    expect(await failureOf(send())).toMatchObject({ code: '21211', kind: 'permanent', outcomeKnown: true })
    expect(await failureOf(send())).toMatchObject({ code: '20429', kind: 'rate-limited', outcomeKnown: true })
    expect(await failureOf(send())).toMatchObject({ code: '20500', outcomeKnown: false })
    const wrongToken = createTwilioSmsProvider({
      apiUrl: fake.url,
      accountSid: fake.accountSid,
      authToken: 'not-the-token',
      from: '+15005550006',
      timeoutMs: 2000,
    })
    expect(
      await failureOf(wrongToken.send({ messageId: 'm-4', to: '+4915100000004', text: 'x' })),
    ).toMatchObject({
      code: '20003',
      kind: 'credentials-refused',
    })
    expect(fake.sentTo('+4915100000003')).toHaveLength(0)
  })

  it('says the outcome is unknown when the provider took the SMS and the answer was lost', async () => {
    fake.script(DROP_AFTER_TAKING)
    const failure = await failureOf(provider().send({ messageId: 'm-5', to: '+4915100000005', text: 'x' }))
    expect(failure).toBeInstanceOf(SmsProviderError)
    expect(failure.outcomeKnown).toBe(false)
    expect(fake.sentTo('+4915100000005')).toHaveLength(1)
  })

  it('knows nothing went when nothing listens', async () => {
    const closed = await startFakeSms()
    const url = closed.url
    await closed.close()
    const nowhere = createTwilioSmsProvider({
      apiUrl: url,
      accountSid: 'AC1',
      authToken: 't',
      from: '+15005550006',
      timeoutMs: 2000,
    })
    const failure = await failureOf(nowhere.send({ messageId: 'm-6', to: '+4915100000006', text: 'x' }))
    expect(failure).toMatchObject({ code: 'NETWORK', kind: 'retryable', outcomeKnown: true })
  })
})

describe('the fake SMS provider', () => {
  it('signs status callbacks as Twilio does, against the StatusCallback URL', async () => {
    const { providerMessageId } = await provider().send({ messageId: 'm-7', to: '+4915100000007', text: 'x' })
    const signed = fake.statusCallback(providerMessageId, 'undelivered')
    expect(signed.url).toBe(CALLBACK)
    expect(signed.params).toMatchObject({
      MessageSid: providerMessageId,
      MessageStatus: 'undelivered',
      ErrorCode: '30003',
    })
    const signature = signed.headers['x-twilio-signature']
    expect(isTwilioSignature(signature, fake.authToken, CALLBACK, signed.params)).toBe(true)
    expect(isTwilioSignature(signature, 'another-token', CALLBACK, signed.params)).toBe(false)
    expect(isTwilioSignature(signature, fake.authToken, `${CALLBACK}?x=1`, signed.params)).toBe(false)
    expect(
      isTwilioSignature(signature, fake.authToken, CALLBACK, {
        ...signed.params,
        MessageStatus: 'delivered',
      }),
    ).toBe(false)
  })
})

describe('the sandbox SMS provider', () => {
  it('takes every SMS with a fresh sid', async () => {
    const sandbox = createSandboxSmsProvider()
    const a = await sandbox.send({ messageId: 'a', to: '+1', text: 'x' })
    const b = await sandbox.send({ messageId: 'b', to: '+1', text: 'x' })
    expect(a.status).toBe('queued')
    expect(a.providerMessageId).not.toBe(b.providerMessageId)
  })
})
