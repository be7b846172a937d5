import { CAMPAIGN_AUDIENCE_RESERVED_COLUMNS } from '@dispatch/contracts'
import { AppError } from '../../errors.ts'

/** A template variable's name, as a send's `variables` take it. */
export const VARIABLE_NAME = /^[A-Za-z0-9_.-]{1,64}$/
/** The longest variable value a send takes. */
export const VARIABLE_MAX_CHARS = 1024

/** Where each part of a row is in a CSV's records, from its header. */
export interface CsvColumns {
  count: number
  phone: number
  userId: number
  /** Each variable's name and column. */
  variables: Array<{ name: string; at: number }>
}

const reserved = new Map(CAMPAIGN_AUDIENCE_RESERVED_COLUMNS.map((name) => [name.toLowerCase(), name]))
const quoted = (name: string) => JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)

/**
 * A CSV's columns from its header: `phone` and/or `userId`, `clientReference` (ignored), and one
 * column per body variable of the template (`expected`; null: the template is not in a synced
 * catalog, so any well-formed name is taken). A header that names a variable the template lacks,
 * or lacks one it needs, is the file's fault: 400 for the whole upload.
 */
export function csvColumns(header: string[] | null, expected: string[] | null): CsvColumns {
  if (header === null) throw new AppError('VALIDATION_ERROR', 'The header (line 1) could not be read')
  const columns: CsvColumns = { count: header.length, phone: -1, userId: -1, variables: [] }
  const seen = new Set<string>()
  header.forEach((cell, at) => {
    const name = cell.trim()
    if (name === '') throw new AppError('VALIDATION_ERROR', `Header column ${at + 1} has no name`)
    const special = reserved.get(name.toLowerCase())
    const key = special ?? name
    if (seen.has(key)) throw new AppError('VALIDATION_ERROR', `The header names ${quoted(key)} twice`)
    seen.add(key)
    if (special === 'phone') columns.phone = at
    else if (special === 'userId') columns.userId = at
    else if (special === undefined) {
      if (expected ? !expected.includes(name) : !VARIABLE_NAME.test(name)) {
        throw new AppError(
          'VALIDATION_ERROR',
          expected
            ? `The header's column ${quoted(name)} names no variable of the template (its body takes ${listOf(expected)})`
            : `The header's column ${quoted(name)} is not a variable name (letters, digits, _ . -, at most 64)`,
        )
      }
      columns.variables.push({ name, at })
    }
  })
  if (columns.phone === -1 && columns.userId === -1) {
    throw new AppError('VALIDATION_ERROR', 'The header has neither a "phone" nor a "userId" column')
  }
  const missing = (expected ?? []).filter((name) => !columns.variables.some((v) => v.name === name))
  if (missing.length > 0) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The template's body takes ${missing.map((n) => `{{${n}}}`).join(', ')}, which no column of the header gives`,
    )
  }
  return columns
}

const listOf = (names: string[]) =>
  names.length === 0 ? 'no variable' : names.map((n) => `{{${n}}}`).join(', ')
