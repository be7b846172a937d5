import { generateApiKey, insertApiKey } from '@dispatch/db'

/** An API key of the benchmark's own, inserted as the admin's approval leaves it: its row. */
export function insertBenchKey(
  db: Parameters<typeof insertApiKey>[0],
  clientName: string,
  scopes: string[] = ['send:free-text'],
) {
  const { keyHash, keyPrefix } = generateApiKey('development')
  return insertApiKey(db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName,
    email: 'bench@dispatch.test',
    scopes,
    requestedTenantId: null,
    createdAt: new Date(),
  })
}
