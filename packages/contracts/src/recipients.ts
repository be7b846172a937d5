import Type from 'typebox'

/** E.164: a plus, a non-zero digit, then 7 to 14 digits. */
export const Phone = Type.String({
  pattern: '^\\+[1-9][0-9]{7,14}$',
  description: 'E.164, e.g. +5511987654321',
})

/**
 * A WhatsApp business-scoped user id (BSUID): the two-letter country of the user's number, a dot,
 * then up to 128 letters and digits, with `ENT.` before them for a portfolio-level (parent) id:
 * `US.13491208655302741918`, `US.ENT.11815799212886844830`. Stored and sent back exactly as given.
 */
export const USER_ID_PATTERN = '^[A-Z]{2}\\.(ENT\\.)?[A-Za-z0-9]{1,128}$'
export const UserId = Type.String({
  pattern: USER_ID_PATTERN,
  description:
    'A WhatsApp business-scoped user id (BSUID), e.g. US.13491208655302741918, for a user known by username',
})
const userIdShape = new RegExp(USER_ID_PATTERN)
export const isUserId = (value: string) => userIdShape.test(value)

/**
 * Who a send goes to, and what it quotes: exactly one of `phone` and `userId` (checked at accept,
 * naming the field), and optionally `replyTo`, the message it answers (the Cloud API's `context`).
 */
export const recipientFields = {
  phone: Type.Optional(Phone),
  userId: Type.Optional(UserId),
  replyTo: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '\\S',
      description:
        "A message this one quotes: a Dispatch messageId (sent or received) or the platform's wamid",
    }),
  ),
}

/** A send's recipient, as the rest of Dispatch keys it: the phone when given, else the BSUID. */
export interface Recipient {
  phone?: string | undefined
  userId?: string | undefined
}
export const recipientOf = (body: Recipient): string => (body.phone ?? body.userId) as string

/** The body's field that names the recipient, for an error that points at it: `body.phone`, `body.userId`. */
export const recipientField = (body: Recipient, field: string) =>
  `${field}.${body.phone === undefined ? 'userId' : 'phone'}`

/** Why a body's recipient is not exactly one of `phone` and `userId`, or undefined. */
export function recipientProblem(body: Recipient, field: string): string | undefined {
  if (body.phone !== undefined && body.userId !== undefined) {
    return `${field} must have either phone or userId, not both`
  }
  if (body.phone === undefined && body.userId === undefined) {
    return `${field}.phone is required (or userId, for a user known only by username)`
  }
  return undefined
}
