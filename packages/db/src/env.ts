import { APP_ENVS } from '@dispatch/contracts'
import { loadEnvOrExit } from '@dispatch/contracts/env'
import Type from 'typebox'

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/dispatch'

const DbEnv = Type.Object({
  APP_ENV: Type.Enum(APP_ENVS, { default: 'development' }),
  DATABASE_URL: Type.String({ pattern: '^postgres(ql)?://', default: DEFAULT_DATABASE_URL }),
})

export const loadDbEnv = () => loadEnvOrExit(DbEnv, process.env)
