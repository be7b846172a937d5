import Type, { type Static } from 'typebox'

/**
 * Quiet hours: a daily stretch of the recipient's local time in which a message is not sent but
 * held (`scheduled`, `scheduledReason: "quiet_hours"`) until they end. Set on a key by an admin, or
 * on one send; `priority: "high"` skips them.
 */

const ClockTime = (description: string) =>
  Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description })

/** An IANA time zone name (`America/Sao_Paulo`); checked against the runtime's tz data at accept. */
export const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "An IANA time zone (`America/Sao_Paulo`): the recipient's, for quiet hours",
})

export const QuietHours = Type.Object(
  {
    start: ClockTime('When quiet hours start, `HH:MM` in the recipient\'s local time ("21:00")'),
    end: ClockTime('When they end, `HH:MM` ("08:00"); before `start` when they span midnight'),
    timeZone: Type.Optional({
      ...TimeZone,
      description:
        'The zone for recipients whose own is unknown (a username with no phone, a number whose country is not known); default UTC',
    }),
  },
  {
    additionalProperties: false,
    description:
      "Hold messages that would reach the recipient in this stretch of their local time until it ends. The zone: the send's `timeZone`, else the phone number's country, else `timeZone` here, else UTC",
  },
)
export type QuietHours = Static<typeof QuietHours>

/** Why a message waits: its `sendAt`, the recipient's quiet hours, or the portfolio's messaging limit. */
export const SCHEDULED_REASONS = ['send_at', 'quiet_hours', 'messaging_limit'] as const
export type ScheduledReason = (typeof SCHEDULED_REASONS)[number]

/** Whether the runtime's time-zone data knows this zone (`Intl`, ICU's copy of the IANA database). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** Minutes after midnight of an `HH:MM` time. */
export const clockMinutes = (time: string): number => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))

/** What is wrong with quiet hours the schema let through (a zero-length stretch, an unknown zone). */
export function quietHoursProblem(quiet: QuietHours, field: string): string | undefined {
  if (quiet.start === quiet.end) return `${field}.end must differ from start (quiet hours of no length)`
  if (quiet.timeZone !== undefined && !isTimeZone(quiet.timeZone)) {
    return `${field}.timeZone must be an IANA time zone such as "America/Sao_Paulo"`
  }
  return undefined
}
