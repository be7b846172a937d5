import closeWithGrace from 'close-with-grace'
import { loadApiConfig } from './env.ts'

// The configuration first: a bad one exits before the app's modules are loaded (seconds on a busy
// machine), naming each bad variable.
const config = loadApiConfig()
const [{ buildApp }, { createDeps }] = await Promise.all([import('./app.ts'), import('./deps.ts')])
const deps = createDeps(config)
const app = await buildApp(deps)

if (config.usingDevAdminToken) {
  app.log.warn('ADMIN_TOKENS is unset: the development admin token from the README is in use')
}

closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an error')
  else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
  await app.close()
})

try {
  const address = await app.listen({ host: config.HOST, port: config.PORT })
  app.log.info(`Dispatch API listening on ${address} (docs at ${address}/docs)`)
} catch (err) {
  app.log.fatal({ err }, 'could not start the API')
  process.exit(1)
}
