import type { QuietHours } from '@dispatch/contracts'
import { QuietHoursClock } from './quiet-hours-clock.ts'
import { RecipientZones } from './recipient-zones.ts'

/**
 * Quiet hours at accept: when a message due at some time would reach its recipient inside their
 * quiet hours, the time they end. The recipient's zone: the send's `timeZone`, else their phone
 * number's country (every zone of it), else the quiet hours' own `timeZone`, else UTC. Worked out in
 * memory: a phone's zones are kept by its first digits, an answer for the minute it holds.
 */
export class QuietHoursRule {
  readonly #zones = new RecipientZones()
  readonly #clock = new QuietHoursClock()
  /** One array per named zone, so the clock keeps its answers per zone. */
  readonly #named = new Map<string, readonly string[]>()

  /** When a message to `recipient` due at `due` (ms) may go; undefined: at once. */
  holdUntil(
    recipient: { phone?: string | undefined },
    quiet: QuietHours,
    timeZone: string | undefined,
    due: number,
  ): number | undefined {
    const zones =
      (timeZone === undefined ? undefined : this.#zone(timeZone)) ??
      (recipient.phone === undefined ? undefined : this.#zones.ofPhone(recipient.phone)) ??
      this.#zone(quiet.timeZone ?? 'UTC')
    return this.#clock.releaseAt(quiet, zones, due)
  }

  #zone(zone: string): readonly string[] {
    let zones = this.#named.get(zone)
    if (!zones) {
      zones = [zone]
      this.#named.set(zone, zones)
    }
    return zones
  }
}
