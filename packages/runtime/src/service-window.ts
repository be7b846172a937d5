import { join } from 'node:path'
import { luaScripts } from './lua-scripts.ts'

/**
 * The customer-service window: free-form messages (anything but a template) reach a recipient only
 * within 24 h of their last message to that business number. The API records each reply's time in
 * Redis, so a send can be checked against it without Postgres (`serviceWindowKey`); the same time is
 * kept in Postgres (`conversation_windows`), from which a worker rebuilds the Redis copy when it is
 * missing (a Redis that lost its data), and marks it complete (`serviceWindowsLoadedKey`).
 */
export const SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/** The time (ms) of the recipient's last message to this business number, while the window is open. */
export const serviceWindowKey = (prefix: string, phoneNumberId: string, phone: string) =>
  `${prefix}:window:${phoneNumberId}:${phone}`

/**
 * Set once the Redis copy holds every open window (a worker rebuilt it from Postgres, or it has
 * been written since the start): without it, a missing window is unknown, not closed.
 */
export const serviceWindowsLoadedKey = (prefix: string) => `${prefix}:window:loaded`

/**
 * Records a recipient's message in its window (lua/service-window/recordServiceWindow-1.lua); a
 * message older than the one recorded never moves the window back.
 */
export const SERVICE_WINDOW_RECORD_SCRIPT = luaScripts(join(import.meta.dirname, 'lua/service-window'), [
  'recordServiceWindow',
]).recordServiceWindow

/**
 * What Redis says of a window: `open`, `closed` (the copy is complete and has no message within
 * 24 h), or `unknown` (the copy is not complete: the platform decides, as with the policy off).
 */
export function serviceWindowState(
  lastInbound: string | null,
  loaded: string | null,
  nowMs: number,
): 'open' | 'closed' | 'unknown' {
  if (lastInbound !== null && Number(lastInbound) + SERVICE_WINDOW_MS > nowMs) return 'open'
  return loaded === null ? 'unknown' : 'closed'
}
