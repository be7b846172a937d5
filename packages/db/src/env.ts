import { createSecretBox, secretsEnv } from '@dispatch/runtime'
import { commonEnv, exitOnConfigError, parseEnv } from '@dispatch/runtime/env'
import Type from 'typebox'

const DbEnv = Type.Object({ APP_ENV: commonEnv.APP_ENV, DATABASE_URL: commonEnv.DATABASE_URL })

export const loadDbEnv = () => exitOnConfigError(() => parseEnv(DbEnv, process.env))

/** `pnpm secrets:rotate`: the database, and the keys that seal and open stored secrets. */
const RotateEnv = Type.Object({ ...DbEnv.properties, ...secretsEnv })

export const loadRotateEnv = () =>
  exitOnConfigError(() => {
    const env = parseEnv(RotateEnv, process.env)
    return { env, box: createSecretBox(env) }
  })
