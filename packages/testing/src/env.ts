import { existsSync } from 'node:fs'

/** Where the tests find Postgres and Redis: the environment first, then Docker, then the local defaults. */
export const testEnv = {
  databaseUrl: process.env.DATABASE_URL,
  redisUrl: process.env.REDIS_URL,
  dockerAvailable: Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock'),
}

export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379'
