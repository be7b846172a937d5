import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** The `ENV` lines of a Dockerfile stage, as `NAME=value` pairs. */
function stageEnv(dockerfile: string, stage: string): Record<string, string> {
  const lines = dockerfile.split('\n')
  const start = lines.findIndex((line) => new RegExp(`^FROM \\S+ AS ${stage}$`, 'i').test(line))
  const env: Record<string, string> = {}
  for (const line of lines.slice(start + 1)) {
    if (/^FROM /i.test(line)) break
    const match = /^ENV (.+)$/.exec(line)
    for (const pair of match?.[1]?.split(/\s+/) ?? []) {
      const [name, value] = pair.split('=')
      if (name && value !== undefined) env[name] = value
    }
  }
  return env
}

describe('the image and the compose stack', () => {
  it('runs the image as production unless told otherwise', () => {
    expect(stageEnv(read('Dockerfile'), 'base')).toMatchObject({ APP_ENV: 'production' })
  })

  it('has every process of the local compose stack say development itself', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as {
      services: Record<string, { build?: unknown; environment?: Record<string, string> }>
    }
    const ours = Object.entries(compose.services).filter(([, service]) => service.build)
    expect(ours.map(([name]) => name).sort()).toEqual(['api', 'migrate', 'worker'])
    for (const [name, service] of ours) expect(service.environment?.APP_ENV, name).toBe('development')
  })
})
