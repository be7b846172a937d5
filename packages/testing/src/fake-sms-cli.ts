/**
 * The tests' fake SMS provider (Twilio's Messages API shape) as a standalone server, to try the
 * channel fallback without a Twilio account (docs/fallback.md, "Trying it against the fakes"):
 *
 *   pnpm fake:sms          # listens on 127.0.0.1:4030 (FAKE_SMS_PORT)
 *
 * It takes SMS with SMS_ACCOUNT_SID and SMS_AUTH_TOKEN (the service's; demo values by default),
 * prints each, and reports it `sent`, then `delivered`, to its StatusCallback, signed with the auth
 * token as Twilio signs (`X-Twilio-Signature`). Its record of each SMS (`GET …/Messages/{Sid}.json`)
 * says the price FAKE_SMS_PRICE (default `-0.00750`) in FAKE_SMS_PRICE_UNIT (`USD`).
 */
import { fakeSmsEnv } from './env.ts'
import { startFakeSms } from './sms-server.ts'

const { port, accountSid, authToken, price, priceUnit } = fakeSmsEnv()

const sms = await startFakeSms({
  port,
  accountSid,
  authToken,
  pricing: { price, priceUnit },
  onTaken: (request) => {
    console.log(`SMS to ${request.params.To}: "${request.params.Body}" → ${request.sid}`)
    if (!request.params.StatusCallback) return
    const report = async (status: string) => {
      try {
        const res = await sms.postStatus(request.sid as string, status)
        console.log(`  status ${status} → ${res.status}`)
      } catch (error) {
        console.log(`  status ${status} failed: ${(error as Error).message}`)
      }
    }
    setTimeout(() => void report('sent'), 500)
    setTimeout(() => void report('delivered'), 1500)
  },
})
console.log(`Fake SMS provider on ${sms.url}. Run the API and the worker with:
  SMS_PROVIDER=twilio SMS_API_URL=${sms.url} SMS_ACCOUNT_SID=${accountSid} SMS_AUTH_TOKEN=${authToken} \\
  SMS_FROM=+15005550006 SMS_STATUS_CALLBACK_URL=http://127.0.0.1:3000/api/webhooks/sms/status`)
process.once('SIGINT', () => void sms.close().then(() => process.exit(0)))
process.once('SIGTERM', () => void sms.close().then(() => process.exit(0)))
