import { randomBytes } from 'node:crypto'
import { migrateDatabase } from '@dispatch/db/migrate'
import postgres from 'postgres'
import type { TestProject } from 'vitest/node'
import './database.ts'
import { LOCAL_DATABASE_URL, LOCAL_REDIS_URL, testEnv } from './env.ts'
import { deleteKeysUnder } from './redis-keys.ts'

type Stop = () => Promise<void>

async function startContainers(): Promise<{ postgresUrl: string; redisUrl: string; stop: Stop }> {
  const { GenericContainer, Wait } = await import('testcontainers')
  const [pg, redis] = await Promise.all([
    new GenericContainer('postgres:17-alpine')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
      .start(),
    new GenericContainer('redis:7-alpine').withExposedPorts(6379).start(),
  ])
  return {
    postgresUrl: `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/postgres`,
    redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
    stop: async () => {
      await Promise.all([pg.stop(), redis.stop()])
    },
  }
}

/**
 * Runs once per `vitest run`: finds Postgres and Redis (DATABASE_URL / REDIS_URL, else
 * testcontainers where Docker is there, else the local defaults), migrates one template database,
 * and on teardown drops every database and Redis key the run made.
 */
export default async function setup(project: TestProject) {
  const runId = `dispatch_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  const useContainers = !testEnv.databaseUrl && !testEnv.redisUrl && testEnv.dockerAvailable
  const containers = useContainers ? await startContainers() : undefined
  const postgresUrl = containers?.postgresUrl ?? testEnv.databaseUrl ?? LOCAL_DATABASE_URL
  const redisUrl = containers?.redisUrl ?? testEnv.redisUrl ?? LOCAL_REDIS_URL

  const admin = postgres(postgresUrl, { max: 1, onnotice: () => {} })
  const templateDatabase = `${runId}_template`
  await admin.unsafe(`create database "${templateDatabase}"`)
  const templateUrl = new URL(postgresUrl)
  templateUrl.pathname = `/${templateDatabase}`
  await migrateDatabase(templateUrl.toString())

  project.provide('postgresUrl', postgresUrl)
  project.provide('templateDatabase', templateDatabase)
  project.provide('redisUrl', redisUrl)
  project.provide('runId', runId)

  return async () => {
    const leftovers = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`${runId}%`}`
    for (const { datname } of leftovers)
      await admin.unsafe(`drop database if exists "${datname}" with (force)`)
    await admin.end({ timeout: 5 })
    await deleteKeysUnder(redisUrl, runId)
    await containers?.stop()
  }
}
