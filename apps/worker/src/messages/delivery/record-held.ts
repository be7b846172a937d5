import { type Db, type HeldMessage, recordHeldMessages } from '@dispatch/db'
import { turnBatched } from '@dispatch/runtime/redis'
import type { MessageDelivery } from './types.ts'

/** Each database's hold records, gathered per turn of the event loop into one statement. */
const writers = new WeakMap<Db, (held: HeldMessage) => Promise<void>>()
function writerOf(db: Db) {
  let write = writers.get(db)
  if (!write) {
    write = turnBatched(async (held: HeldMessage[]) => {
      await recordHeldMessages(db, held)
      return held.map(() => undefined)
    })
    writers.set(db, write)
  }
  return write
}

/**
 * A message held for its portfolio's messaging limit, recorded in Postgres as `scheduled`
 * (`scheduledReason: messaging_limit`): a campaign counts it `held`, and its view says so, while
 * its job waits in Redis. Written on its first hold only (the job says `messaging_limit` from
 * then on): once room frees, every held job wakes and most are held again, and those holds cost
 * Postgres nothing (the record keeps the first hold's `sendAt`; the message's view reads the job's
 * own while it is held). Postgres unreachable: the hold goes on in Redis alone, the message counted
 * `pending` until it goes, as the worker's outcome then records it.
 */
export async function recordHeld(delivery: MessageDelivery, sendAt: Date): Promise<void> {
  const { data, run, deps, log } = delivery
  if (data.scheduledReason === 'messaging_limit') return
  const { status, platformMessageId, lastErrorCode, lastErrorMessage, fallbackUsed, ...fields } =
    delivery.outcome('sending', { attempts: run.attemptsMade })
  try {
    await writerOf(deps.db)({ ...fields, sendAt, scheduledReason: 'messaging_limit' })
  } catch (error) {
    log.warn(
      { err: error },
      'held for the messaging limit, not recorded in Postgres: counted pending until it goes',
    )
  }
}
