import { announceOptOut, OPT_OUTS_RESET, optOutAnnouncement } from '@dispatch/runtime'
import { testQueuePrefix, testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterEach, expect, it } from 'vitest'
import { OptOutWatch } from '../src/messages/consent/watch.ts'

const NUMBER = '106540352242922'
const opened: Redis[] = []
const watches: OptOutWatch[] = []

afterEach(() => {
  for (const watch of watches.splice(0)) watch.close()
  for (const redis of opened.splice(0)) redis.disconnect()
})

function connection() {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null })
  opened.push(redis)
  return redis
}

/** A watch on a prefix of its own, and a way to announce on it as the API does. */
function world() {
  const prefix = testQueuePrefix()
  const publisher = connection()
  return {
    announce: (recipientHash: string) =>
      announceOptOut(publisher, prefix, optOutAnnouncement(NUMBER, recipientHash)),
    reset: () => announceOptOut(publisher, prefix, OPT_OUTS_RESET),
    watch(redis = connection()) {
      const watch = new OptOutWatch(redis, prefix, pino({ level: 'silent' }))
      watches.push(watch)
      watch.start()
      return watch
    },
  }
}

/** A message accepted well after the watch caught up (past its clock margin). */
const acceptedLater = () => Date.now() + 5_000
const skips = (watch: OptOutWatch, hash: string, acceptedAt = acceptedLater()) =>
  !watch.mustRead(NUMBER, hash, acceptedAt)
const caughtUp = (watch: OptOutWatch, hash = 'nobody') =>
  waitFor(() => skips(watch, hash) || undefined, { what: 'the watch to catch up' })

it('skips the read only once caught up, for a recipient nothing was announced of', async () => {
  const { watch: start } = world()
  const watch = start()
  expect(skips(watch, 'hash-a')).toBe(false)
  await caughtUp(watch, 'hash-a')
  // Accepted before its horizon (a message scheduled long ago): an opt-out may be older than the stream.
  expect(skips(watch, 'hash-a', Date.now() - 3_600_000)).toBe(false)
})

it('reads the entry of a recipient announced before the watch started, or while it runs, and no other', async () => {
  const { watch: start, announce } = world()
  await announce('before-start')
  const watch = start()
  await caughtUp(watch)
  expect(skips(watch, 'before-start')).toBe(false)
  await announce('while-running')
  await waitFor(() => !skips(watch, 'while-running') || undefined, { what: 'the announcement followed' })
  expect(skips(watch, 'someone-else')).toBe(true)
  // The same recipient through another business number is another entry.
  expect(watch.mustRead('999999999999999', 'while-running', acceptedLater())).toBe(false)
})

it('a rebuilt copy makes every message accepted before it read its entry', async () => {
  const { watch: start, reset } = world()
  const watch = start()
  await caughtUp(watch)
  const accepted = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 100))
  // Accepted after the horizon: skipped, until a rebuild says the copy changed behind the stream.
  expect(skips(watch, 'hash-d', accepted)).toBe(true)
  await reset()
  await waitFor(() => !skips(watch, 'hash-d', accepted) || undefined, { what: 'the reset followed' })
  // And a watch starting after the rebuild knows it too.
  const later = start()
  await caughtUp(later)
  expect(skips(later, 'hash-d', accepted)).toBe(false)
})

it('an announcement made while its connection was down is still followed once back', async () => {
  const { watch: start, announce } = world()
  const redis = connection()
  const watch = start(redis)
  await caughtUp(watch)
  const closed = new Promise((resolve) => redis.once('close', resolve))
  redis.disconnect(true)
  await closed
  await announce('during-the-gap')
  await waitFor(() => redis.status === 'ready' || undefined, { what: 'the reconnect' })
  // Followed once back (the read may have been sent again as it was, without a catch-up: wait for it).
  await waitFor(() => !skips(watch, 'during-the-gap') || undefined, { what: 'the gap announcement followed' })
})
