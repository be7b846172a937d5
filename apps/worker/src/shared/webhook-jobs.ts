import {
  WEBHOOK_BUNDLE_JOB_NAME,
  WEBHOOK_BUNDLE_JOB_OPTIONS,
  WEBHOOK_JOB_OPTIONS,
  type WebhookBundleJob,
  type WebhookJob,
  webhookEventBody,
  webhookJobId,
} from '@dispatch/contracts'
import type { WebhookDelivery } from '@dispatch/db'
import { webhookBundleJobId } from '@dispatch/runtime'
import type { JobsOptions } from 'bullmq'

/** What the `webhooks` queue holds: one event's delivery, or a bundle of one endpoint's events. */
export type WebhooksQueueJob = WebhookJob | WebhookBundleJob

export interface WebhooksQueueAdd {
  name: string
  data: WebhooksQueueJob
  opts: JobsOptions
}

/**
 * The jobs that deliver a relayed batch's events: for each endpoint, its events in order, up to
 * `bundleSize` to a bundle. An endpoint with one event gets a job of its own, as with a bundle
 * size of 1, which turns bundling off.
 */
export function webhookJobsFor(deliveries: WebhookDelivery[], bundleSize: number): WebhooksQueueAdd[] {
  const byEndpoint = new Map<string, WebhookDelivery[]>()
  for (const delivery of deliveries) {
    const list = byEndpoint.get(delivery.endpointId)
    if (list) list.push(delivery)
    else byEndpoint.set(delivery.endpointId, [delivery])
  }
  const jobs: WebhooksQueueAdd[] = []
  for (const [endpointId, list] of byEndpoint) {
    for (let from = 0; from < list.length; from += bundleSize) {
      const part = list.slice(from, from + bundleSize)
      if (part.length === 1) {
        const [d] = part as [WebhookDelivery]
        jobs.push(singleWebhookJob(d.eventId, endpointId, d.eventType, webhookEventBody(d.payload)))
        continue
      }
      jobs.push(
        bundleWebhookJob(
          endpointId,
          part.map((d) => d.eventId),
        ),
      )
    }
  }
  return jobs
}

/** A bundle of one endpoint's events, as the relay makes it (and a bundle's untried rest goes on as). */
export function bundleWebhookJob(
  endpointId: string,
  eventIds: string[],
): WebhooksQueueAdd & { data: WebhookBundleJob } {
  return {
    name: WEBHOOK_BUNDLE_JOB_NAME,
    data: { endpointId, eventIds },
    opts: { ...WEBHOOK_BUNDLE_JOB_OPTIONS, jobId: webhookBundleJobId(endpointId, eventIds) },
  }
}

/** One event's own delivery job, as the relay makes it (and a bundle's failed try goes on as). */
export function singleWebhookJob(
  eventId: string,
  endpointId: string,
  eventType: string,
  body: string,
  triesBefore?: number,
): WebhooksQueueAdd & { data: WebhookJob } {
  return {
    name: eventType,
    data: {
      eventId,
      endpointId,
      eventType,
      body,
      reason: 'event',
      ...(triesBefore ? { triesBefore } : {}),
    },
    opts: { ...WEBHOOK_JOB_OPTIONS, jobId: webhookJobId(eventId, endpointId) },
  }
}
