import { redisClusterMissing } from '@dispatch/testing'
import { describe } from 'vitest'
import { manyProcessesSuite } from './many-processes-suite.ts'

const missing = redisClusterMissing()
if (missing) console.warn(`Redis Cluster tests skipped: ${missing}`)

describe.skipIf(missing !== undefined)(
  `many processes on a Redis Cluster${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    manyProcessesSuite('cluster')
  },
)
