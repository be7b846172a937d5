import { commonEnv, exitOnConfigError, parseEnv } from '@dispatch/contracts/env'
import Type from 'typebox'

const DbEnv = Type.Object({ APP_ENV: commonEnv.APP_ENV, DATABASE_URL: commonEnv.DATABASE_URL })

export const loadDbEnv = () => exitOnConfigError(() => parseEnv(DbEnv, process.env))
