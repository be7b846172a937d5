import { commonEnv, loadEnvOrExit } from '@dispatch/contracts/env'
import Type from 'typebox'

const DbEnv = Type.Object({ APP_ENV: commonEnv.APP_ENV, DATABASE_URL: commonEnv.DATABASE_URL })

export const loadDbEnv = () => loadEnvOrExit(DbEnv, process.env)
