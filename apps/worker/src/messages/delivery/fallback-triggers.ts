import type { Sql } from '@dispatch/db'
import { EXPIRED_RULE, fallBackFromJob } from '../sms-fallback.ts'
import type { MessageDelivery } from './types.ts'

/**
 * A message WhatsApp took that carries a fallback: its timer armed (fallback-timer.ts) before the
 * job completes, so a process killed before this leaves the job to run again, find its send and
 * arm it then: "no `delivered` in time" with `afterSeconds`, else a hold that a 131026 reported
 * later by a status webhook runs. Nothing for any other message.
 */
export async function armFallbackTimer({ data, deps, log }: MessageDelivery): Promise<void> {
  if (data.fallback === undefined || !deps.fallbackTimers) return
  try {
    await deps.fallbackTimers.arm(data, new Date())
  } catch (error) {
    // Unarmed, no SMS follows WhatsApp's `sent`: at most once holds; the miss is logged for ops.
    log.error({ err: error }, 'sms fallback timer not armed; no sms will follow if it is not delivered')
  }
}

/** Its validity ended before it went, recorded `expired`: its `fallback.sms` goes instead. */
export async function fallBackAfterExpiry({ data, deps, log }: MessageDelivery): Promise<void> {
  if (!data.fallback) return
  const sql = deps.db.$client as Sql
  await fallBackFromJob({ sql, sms: deps.sms, clock: () => new Date(), log }, data, EXPIRED_RULE)
}
