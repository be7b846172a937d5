import { Scopes } from '@dispatch/contracts'
import { and, eq } from 'drizzle-orm'
import { generateApiKey } from './api-key-secret.ts'
import { createDb } from './client.ts'
import { loadDbEnv } from './env.ts'
import { apiKeys } from './schema/api-keys.ts'
import { DEMO_IDS, seedDemoCatalog } from './seed-catalog.ts'

const DEMO_CLIENT = 'Dispatch demo client'
const DEMO_TENANT = 'demo'

const { APP_ENV, DATABASE_URL } = loadDbEnv()
const { db, close } = createDb(DATABASE_URL, { max: 1 })
try {
  const added = await seedDemoCatalog(db, DEMO_TENANT)
  console.log(
    added > 0
      ? `demo catalog for tenant "${DEMO_TENANT}": ${added} records added (project ${DEMO_IDS.gutProject})`
      : `demo catalog for tenant "${DEMO_TENANT}" is in place already`,
  )
  if (APP_ENV !== 'development') {
    console.log('production: no demo key is seeded')
  } else {
    const [existing] = await db
      .select({ keyPrefix: apiKeys.keyPrefix })
      .from(apiKeys)
      .where(and(eq(apiKeys.clientName, DEMO_CLIENT), eq(apiKeys.status, 'approved')))
    if (existing) {
      console.log(
        `a demo key (${existing.keyPrefix}…) exists already; its value was printed when it was seeded`,
      )
    } else {
      const { key, keyHash, keyPrefix } = generateApiKey('development')
      const now = new Date()
      await db.insert(apiKeys).values({
        keyHash,
        keyPrefix,
        environment: 'development',
        clientName: DEMO_CLIENT,
        email: 'demo@dispatch.local',
        scopes: Object.values(Scopes),
        // Seeded approved, so bound: as if requested for `demo` and approved with {tenantId: "demo"}.
        requestedTenantId: DEMO_TENANT,
        tenantId: DEMO_TENANT,
        status: 'approved',
        decidedBy: 'seed',
        decidedAt: now,
      })
      console.log(`approved demo key for tenant "${DEMO_TENANT}" (shown once, keep it):\n\n  ${key}\n`)
    }
  }
} finally {
  await close()
}
