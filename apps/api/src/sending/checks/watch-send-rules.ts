import { SENDER_CHANGES_CHANNEL, TEMPLATE_CHANGES_CHANNEL } from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Log } from '../log.ts'
import type { SendRulesCache } from './send-rules-cache.ts'

/**
 * Keeps the send rules current: a sender is reloaded the moment a change to it is announced on
 * `templates:changed` (a sync, a template webhook) or `senders:changed` (an admin's edit), and all
 * are compared again after the subscriber reconnects (announcements made meanwhile are lost).
 * Answers the function that stops watching.
 */
export async function watchSendRules(
  rules: SendRulesCache,
  subscriber: RedisClient,
  prefix: string,
  log: Log,
): Promise<() => void> {
  const channels = new Set(
    [TEMPLATE_CHANGES_CHANNEL, SENDER_CHANGES_CHANNEL].map((name) => `${prefix}:${name}`),
  )
  const onMessage = (channel: string, senderId: string) => {
    if (channels.has(channel)) void rules.reload(senderId)
  }
  let connectedBefore = false
  const onReady = () => {
    if (connectedBefore) void rules.refresh()
    connectedBefore = true
  }
  subscriber.on('message', onMessage)
  subscriber.on('ready', onReady)
  await subscriber.subscribe(...channels).catch((error: Error) => {
    log.warn({ err: error }, 'send-rule change channels not subscribed yet; retries on reconnect')
  })
  return () => {
    subscriber.off('message', onMessage)
    subscriber.off('ready', onReady)
  }
}
