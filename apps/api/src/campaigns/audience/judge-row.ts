import { CAMPAIGN_AUDIENCE_RESERVED_COLUMNS, isStorableText, isUserId, Phone } from '@dispatch/contracts'
import type { AudienceRow } from '@dispatch/db'
import type { CsvColumns } from './columns.ts'
import { VARIABLE_MAX_CHARS, VARIABLE_NAME } from './columns.ts'
import type { CsvRecord } from './csv-records.ts'

const PHONE = new RegExp((Phone as { pattern?: string }).pattern as string)
const echo = (value: string) => JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)

const skipped = (
  line: number,
  raw: string,
  reason: AudienceRow['reason'],
  detail: string,
  recipient: { phone: string | null; userId: string | null } = { phone: null, userId: null },
): AudienceRow => ({ line, ...recipient, variables: null, reason, detail, raw })

/** The recipient a row names, exactly one of a phone (E.164) and a userId; else why not. */
function recipientOf(
  phone: string,
  userId: string,
): { phone: string | null; userId: string | null } | string {
  if (phone !== '' && userId !== '') return 'phone and userId are both given: give one'
  if (phone === '' && userId === '') return 'phone is empty (or userId, for a user known only by username)'
  if (phone !== '')
    return PHONE.test(phone)
      ? { phone, userId: null }
      : `phone: ${echo(phone)} is not E.164 (+, then 8 to 15 digits)`
  return isUserId(userId)
    ? { phone: null, userId }
    : `userId: ${echo(userId)} is not a WhatsApp user id (e.g. US.13491208655302741918)`
}

const valueProblem = (field: string, value: unknown) =>
  typeof value !== 'string'
    ? `${field} must be a string`
    : value.trim() === ''
      ? `${field} is empty`
      : value.length > VARIABLE_MAX_CHARS
        ? `${field} is longer than ${VARIABLE_MAX_CHARS} characters`
        : isStorableText(value)
          ? undefined
          : `${field} holds a NUL character or an unpaired surrogate`

/** A CSV record judged as a send of it would be (what needs Postgres is judged after: duplicates, consent). */
export function judgeCsvRecord(record: CsvRecord, columns: CsvColumns): AudienceRow {
  const { line, fields, raw } = record
  if (fields === null)
    return skipped(line, raw, 'malformed_line', record.problem ?? 'the line could not be read')
  if (raw.includes('\u0000'))
    return skipped(
      line,
      raw.replaceAll('\u0000', '\uFFFD'),
      'malformed_line',
      'the line holds a NUL character',
    )
  if (fields.length !== columns.count) {
    return skipped(
      line,
      raw,
      'malformed_line',
      `${fields.length} field${fields.length === 1 ? '' : 's'}; the header has ${columns.count}`,
    )
  }
  const recipient = recipientOf(
    columns.phone === -1 ? '' : (fields[columns.phone] as string).trim(),
    columns.userId === -1 ? '' : (fields[columns.userId] as string).trim(),
  )
  if (typeof recipient === 'string') return skipped(line, raw, 'invalid_recipient', recipient)
  const variables: Record<string, string> = {}
  let problems: string[] | undefined
  for (const { name, at } of columns.variables) {
    const value = fields[at] as string
    const problem = valueProblem(name, value)
    if (!problem) variables[name] = value
    else if (problems) problems.push(problem)
    else problems = [problem]
  }
  if (problems) return skipped(line, raw, 'invalid_variables', problems.join('; '), recipient)
  return { line, ...recipient, variables, reason: null, detail: null, raw }
}

const NDJSON_FIELDS = new Set([...CAMPAIGN_AUDIENCE_RESERVED_COLUMNS, 'variables'])

/** An NDJSON line (`{"phone"|"userId", "variables": {…}}`) judged as a send of it would be. */
export function judgeNdjsonLine(
  line: number,
  text: string,
  expected: string[] | null,
  tooLong = false,
): AudienceRow {
  if (tooLong)
    return skipped(line, text, 'malformed_line', 'the line is longer than the most an upload reads whole')
  if (text.includes('\u0000'))
    return skipped(
      line,
      text.replaceAll('\u0000', '\uFFFD'),
      'malformed_line',
      'the line holds a NUL character',
    )
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return skipped(line, text, 'malformed_line', 'the line is not JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return skipped(line, text, 'malformed_line', 'the line is not a JSON object')
  }
  const body = parsed as Record<string, unknown>
  for (const key in body) {
    if (!NDJSON_FIELDS.has(key)) return skipped(line, text, 'malformed_line', `unknown property ${echo(key)}`)
  }
  const { phone, userId } = body
  if (
    (phone !== undefined && typeof phone !== 'string') ||
    (userId !== undefined && typeof userId !== 'string')
  ) {
    return skipped(
      line,
      text,
      'invalid_recipient',
      `${typeof phone === 'string' ? 'userId' : 'phone'} must be a string`,
    )
  }
  const recipient = recipientOf(phone?.trim() ?? '', userId?.trim() ?? '')
  if (typeof recipient === 'string') return skipped(line, text, 'invalid_recipient', recipient)
  const given = body.variables ?? {}
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    return skipped(line, text, 'invalid_variables', 'variables must be an object', recipient)
  }
  const values = given as Record<string, unknown>
  const problems: string[] = []
  const variables: Record<string, string> = {}
  for (const name of expected ?? []) {
    if (!(name in values)) problems.push(`variables.${name} is missing`)
  }
  for (const name in values) {
    if (expected ? !expected.includes(name) : !VARIABLE_NAME.test(name)) {
      problems.push(
        expected
          ? `variables.${name} is not in the template`
          : `variables.${echo(name)} is not a variable name`,
      )
      continue
    }
    const problem = valueProblem(`variables.${name}`, values[name])
    if (problem) problems.push(problem)
    else variables[name] = values[name] as string
  }
  if (problems.length > 0) return skipped(line, text, 'invalid_variables', problems.join('; '), recipient)
  return { line, ...recipient, variables, reason: null, detail: null, raw: text }
}
