import { loadDbEnv } from './env.ts'
import { ensureDatabase, migrateDatabase, redactUrl } from './migrate.ts'

const { DATABASE_URL } = loadDbEnv()
try {
  if (await ensureDatabase(DATABASE_URL)) console.log(`created database ${redactUrl(DATABASE_URL)}`)
  await migrateDatabase(DATABASE_URL)
  console.log(`migrations applied to ${redactUrl(DATABASE_URL)}`)
} catch (error) {
  console.error(`migration failed for ${redactUrl(DATABASE_URL)}: ${(error as Error).message}`)
  process.exitCode = 1
}
