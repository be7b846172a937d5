import { describe, expect, it } from 'vitest'
import { mergeExpositions } from './exposition.ts'
import { failureCodeLabel } from './registry.ts'

const queue = (name: string, waiting: number) =>
  [
    '# HELP bullmq_job_count Number of jobs in the queue by state',
    '# TYPE bullmq_job_count gauge',
    `bullmq_job_count{queue="${name}", state="waiting"} ${waiting}`,
    '# HELP bullmq_job_completed_total Total number of completed jobs',
    '# TYPE bullmq_job_completed_total counter',
    `bullmq_job_completed_total{queue="${name}"} 0`,
  ].join('\n')

describe('mergeExpositions', () => {
  it('writes each family once, with the samples of every text, and leaves out the dropped ones', () => {
    const merged = mergeExpositions(
      [queue('email', 1), queue('messages', 2)],
      new Set(['bullmq_job_completed_total']),
    )
    expect(merged).toBe(
      [
        '# HELP bullmq_job_count Number of jobs in the queue by state',
        '# TYPE bullmq_job_count gauge',
        'bullmq_job_count{queue="email", state="waiting"} 1',
        'bullmq_job_count{queue="messages", state="waiting"} 2',
        '',
      ].join('\n'),
    )
  })

  it('is empty for no samples', () => {
    expect(mergeExpositions([])).toBe('')
    expect(mergeExpositions(['# HELP x y\n# TYPE x gauge\n'])).toBe('')
  })
})

describe('failureCodeLabel', () => {
  it('keeps known codes and folds every other into "other"', () => {
    expect(failureCodeLabel('131026')).toBe('131026')
    expect(failureCodeLabel('NETWORK')).toBe('NETWORK')
    expect(failureCodeLabel('HTTP_503')).toBe('HTTP_503')
    expect(failureCodeLabel('987654')).toBe('other')
    expect(failureCodeLabel('HTTP_418')).toBe('other')
  })
})
