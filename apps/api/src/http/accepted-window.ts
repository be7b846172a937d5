import { acceptedWindow, parseTimeBound, TIME_BOUND_RULE } from '@dispatch/contracts'
import { AppError } from '../errors.ts'

/**
 * The acceptance window of `startDate`/`endDate`, or a 400 naming the parameter at fault (in the
 * query string, or a body that carries the same filters).
 */
export function acceptedWindowOf(
  startDate: string | undefined,
  endDate: string | undefined,
  where: 'querystring' | 'body' = 'querystring',
) {
  const bound = (value: string | undefined, name: string) => {
    if (value === undefined) return undefined
    const parsed = parseTimeBound(value)
    if (!parsed) throw new AppError('VALIDATION_ERROR', `${where}.${name} ${TIME_BOUND_RULE}`)
    return parsed
  }
  const window = acceptedWindow(bound(startDate, 'startDate'), bound(endDate, 'endDate'))
  const last = window.before
    ? Date.parse(window.before) - 1
    : window.until
      ? Date.parse(window.until)
      : Infinity
  if (window.from && Date.parse(window.from) > last) {
    throw new AppError('VALIDATION_ERROR', `${where}.startDate must not be after ${where}.endDate`)
  }
  return window
}
