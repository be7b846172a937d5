import { createDb } from './client.ts'
import { loadRotateEnv } from './env.ts'
import { redactUrl } from './migrate.ts'
import { resealSenderTokens } from './queries/sender-admin.ts'
import { resealWebhookSecrets } from './queries/webhook-endpoints.ts'

/**
 * `pnpm secrets:rotate`: re-seals every sender token and webhook signing secret stored under an
 * older key with SECRETS_KEY, and seals the signing secrets stored clear before they were sealed.
 * Run it after a rotation (new key in SECRETS_KEY, the old one in SECRETS_KEY_PREVIOUS), then drop
 * the old key; and once after upgrading to sealed signing secrets. Running it again changes nothing.
 */
const { env, box } = loadRotateEnv()
const { db, close } = createDb(env.DATABASE_URL, { max: 1 })
try {
  const { total, resealed, unreadable } = await resealSenderTokens(db, box)
  console.log(
    `${resealed} of ${total} sender tokens re-sealed under the current SECRETS_KEY in ${redactUrl(env.DATABASE_URL)}`,
  )
  if (unreadable.length > 0) {
    console.error(
      `${unreadable.length} tokens are sealed under a key neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS holds ` +
        `(senders ${unreadable.join(', ')}): add that key to SECRETS_KEY_PREVIOUS and run this again, ` +
        'or give those senders a new token (PATCH /api/admin/senders/:id)',
    )
    process.exitCode = 1
  }
  const webhooks = await resealWebhookSecrets(db, box)
  console.log(
    `${webhooks.resealed} of ${webhooks.total} webhook signing secrets re-sealed under the current SECRETS_KEY ` +
      `(${webhooks.wereClear} of them stored clear until now) in ${redactUrl(env.DATABASE_URL)}`,
  )
  if (webhooks.unreadable.length > 0) {
    console.error(
      `Webhook signing secrets of ${webhooks.unreadable.length} endpoints are sealed under a key neither ` +
        `SECRETS_KEY nor SECRETS_KEY_PREVIOUS holds (endpoints ${webhooks.unreadable.join(', ')}); their ` +
        'deliveries wait: add that key to SECRETS_KEY_PREVIOUS and run this again. Without the key those ' +
        'secrets are lost: the endpoints need new ones (POST /api/third-party/webhook-endpoints/:id/rotate-secret, ' +
        'twice, so the unreadable one is not kept as the previous secret).',
    )
    process.exitCode = 1
  }
} catch (error) {
  // drizzle's message names the query; the driver's reason is its cause. Never the parameters:
  // they hold sealed tokens and secrets, and clear signing secrets read from before sealing.
  const { message, cause } = error as Error & { cause?: Error }
  const query = message.replace(/\nparams: [^\n]*/g, '')
  console.error(`secrets:rotate failed: ${query}${cause?.message ? `\n  ${cause.message}` : ''}`)
  process.exitCode = 1
} finally {
  await close()
}
