import Type from 'typebox'

/**
 * The one rule for an id of ours in a path (`/erasures/{id}`, `/messages/{messageId}`…): a UUID
 * written as Dispatch writes it, 8-4-4-4-12 hex digits. Upper-case hex is the same id (RFC 9562
 * reads UUIDs case-insensitively; the API lowers it before use). Every other spelling Postgres or a
 * validator would take — `urn:uuid:…`, `{…}`, no hyphens — is not an id Dispatch gave out, so it
 * names nothing: 404 `NOT_FOUND`, as an unknown id or another tenant's does, never 400 or 500.
 * The validators use this pattern for `format: 'uuid'` (apps/api/src/plugins/validation.ts), and
 * the API judges every path parameter of that format by it before validation
 * (apps/api/src/http/path-ids.ts).
 */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID = new RegExp(UUID_PATTERN)

/** Whether `value` is an id in the form Dispatch gives out (either case), by `UUID_PATTERN`. */
export const isDispatchId = (value: string): boolean => UUID.test(value)

/** A path parameter naming one of our rows by id; see `UUID_PATTERN` for what a malformed one gets. */
export const PathId = (description = 'An id as Dispatch returned it (a UUID)') =>
  Type.String({ format: 'uuid', description })
