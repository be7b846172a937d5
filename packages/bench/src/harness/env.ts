import { LOCAL_DATABASE_URL, LOCAL_REDIS_URL } from '@dispatch/testing'

/** Where benchmarks run: DATABASE_URL / REDIS_URL, else the machine's local services. */
export const benchEnv = () => ({
  databaseUrl: process.env.DATABASE_URL ?? LOCAL_DATABASE_URL,
  redisUrl: process.env.REDIS_URL ?? LOCAL_REDIS_URL,
  /** BENCH_KEEP: keep a benchmark's database (for EXPLAIN) instead of dropping it at the end. */
  keep: Boolean(process.env.BENCH_KEEP),
  /** BENCH_RESULTS_FILE: where comparisons are recorded (else bench-results/latest.jsonl). */
  resultsFile: process.env.BENCH_RESULTS_FILE,
})
