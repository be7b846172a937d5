import { readFileSync } from 'node:fs'
import { parseApiConfig } from '@dispatch/api'
import { commonEnv } from '@dispatch/runtime/env'
import { parseWorkerConfig } from '@dispatch/worker'
import { describe, expect, it } from 'vitest'
import { dirOf, loadManifests, type Manifest, metricSelectors, validateManifest } from './manifests.ts'
import {
  containerEnv,
  containerPort,
  PARSERS,
  podsOf,
  preStopSeconds,
  SAMPLE_SECRETS,
  selectsPod,
  unknownVariables,
  withSecrets,
} from './pods.ts'

const { manifests, kustomizations } = loadManifests()
const pods = podsOf(manifests)
const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind)
const SECRET_EXAMPLE = 'secret.example.yaml'
/** apps/worker/src/main.ts exits this long after SHUTDOWN_GRACE_MS if jobs still hold it. */
const WORKER_BACKSTOP_SECONDS = 5

const apiPod = pods.find((p) => p.owner.metadata.name === 'dispatch-api')
const workerPods = pods.filter((p) => p.containers[0]?.image === 'dispatch-worker')
const workerConfig = (pod: (typeof pods)[number]) =>
  parseWorkerConfig(withSecrets(containerEnv(pod.containers[0], manifests), 'all'))

describe('every manifest', () => {
  it.each(manifests.map((m) => [`${m.file}: ${m.kind} ${m.metadata.name}`, m] as const))(
    '%s is valid for its kind, with no field the schema does not know',
    (_, manifest) => {
      expect(() => validateManifest(manifest)).not.toThrow()
    },
  )

  it('is applied by the kustomization of its directory, except the Secret example', () => {
    const listed = kustomizations.flatMap((k) =>
      (k.resources ?? []).map((resource) => [dirOf(k.file), resource].filter(Boolean).join('/')),
    )
    const files = [...new Set(manifests.map((m) => m.file))]
    expect(listed.sort()).toEqual(files.filter((file) => file !== SECRET_EXAMPLE).sort())
  })

  it("names images the kustomizations set, all to one release's tag", () => {
    const images = (k: Manifest) => k.images ?? []
    for (const pod of pods) {
      const kustomization = kustomizations.find((k) => dirOf(k.file) === dirOf(pod.owner.file))
      const names = images(kustomization as Manifest).map((image) => image.name)
      for (const container of pod.containers) expect(names).toContain(container.image)
    }
    const tags = new Set(kustomizations.flatMap((k) => images(k).map((image) => image.newTag)))
    expect(tags.size).toBe(1)
  })

  it('runs as a non-root user, read-only, without capabilities, within resource limits', () => {
    for (const { owner, spec, containers } of pods) {
      expect(spec.securityContext?.runAsNonRoot, owner.metadata.name).toBe(true)
      expect(spec.securityContext?.runAsUser, owner.metadata.name).toBeGreaterThan(0)
      for (const c of containers) {
        expect(c.securityContext, owner.metadata.name).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        })
        for (const bound of ['requests', 'limits'])
          expect(Object.keys(c.resources?.[bound] ?? {}).sort(), `${owner.metadata.name} ${bound}`).toEqual([
            'cpu',
            'memory',
          ])
      }
    }
  })
})

describe('settings', () => {
  it.each(
    pods.filter((p) => PARSERS[p.containers[0]?.image]).map((p) => [p.owner.metadata.name, p] as const),
  )('%s sets only variables its app reads, and starts in production with its required secrets', (_, pod) => {
    const container = pod.containers[0]
    const parse = PARSERS[container.image] as (typeof PARSERS)[string]
    const env = containerEnv(container, manifests)
    expect(unknownVariables(parse, withSecrets(env, 'all'))).toEqual([])
    expect(() => parse(withSecrets(env, 'required'))).not.toThrow()
    expect(parse(withSecrets(env, 'required'))).toMatchObject({ APP_ENV: 'production' })
  })

  it('gives the migration Job only the database settings', () => {
    const [job] = ofKind('Job')
    const [container] = job?.spec.template.spec.containers ?? []
    expect(container.image).toBe('dispatch-migrate')
    // The image's own command (Dockerfile, target migrate: packages/db/src/migrate-cli.ts).
    expect(container.command).toBeUndefined()
    const env = containerEnv(container, manifests)
    const names = [...Object.keys(env.values), ...env.secrets.map((ref) => ref.variable)]
    expect(names.sort()).toEqual(['APP_ENV', 'DATABASE_URL'])
    expect(names.every((name) => name in commonEnv)).toBe(true)
  })

  it('reads secrets only from dispatch-secrets, by keys secret.example.yaml lists, and commits no value', () => {
    const example = manifests.find((m) => m.file === SECRET_EXAMPLE)
    expect(example?.kind).toBe('Secret')
    const keys = Object.keys({ ...example?.data, ...example?.stringData }).sort()
    expect(Object.values({ ...example?.data, ...example?.stringData }).every((v) => !v)).toBe(true)
    expect(manifests.filter((m) => m.kind === 'Secret').map((m) => m.file)).toEqual([SECRET_EXAMPLE])
    const refs = pods.flatMap((pod) =>
      pod.containers.flatMap((c: unknown) => containerEnv(c, manifests).secrets),
    )
    for (const ref of refs) {
      expect(ref.secret).toBe(example?.metadata.name)
      expect(ref.variable).toBe(ref.key)
    }
    expect([...new Set(refs.map((ref) => ref.key))].sort()).toEqual(keys)
    expect(Object.keys(SAMPLE_SECRETS).sort()).toEqual(keys)
  })

  it('lists every Secret key in docs/kubernetes.md', () => {
    const docs = readFileSync(new URL('../../docs/kubernetes.md', import.meta.url), 'utf8')
    for (const key of Object.keys(SAMPLE_SECRETS)) expect(docs).toContain(`\`${key}\``)
  })
})

describe('the API', () => {
  const container = apiPod?.containers[0]
  const config = () => parseApiConfig(withSecrets(containerEnv(container, manifests), 'all'))

  it('is probed for readiness on /readyz and for liveness on /healthz, on the port it listens on', () => {
    const { HOST, PORT } = config()
    expect(HOST).toBe('0.0.0.0')
    expect(container.readinessProbe.httpGet.path).toBe('/readyz')
    expect(container.livenessProbe.httpGet.path).toBe('/healthz')
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      if (probe) expect(containerPort(container, probe.httpGet.port)).toBe(PORT)
    }
  })

  it('serves /metrics to Prometheus on a port of its own, which the Service does not expose', () => {
    const { METRICS_PORT, METRICS_HOST, PORT } = config()
    expect(METRICS_PORT).toBeDefined()
    expect(METRICS_PORT).not.toBe(PORT)
    expect(METRICS_HOST).toBe('0.0.0.0')
    expect(containerPort(container, METRICS_PORT as number)).toBe(METRICS_PORT)
    expect(apiPod?.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(METRICS_PORT),
      'prometheus.io/path': '/metrics',
    })
    const [service] = ofKind('Service')
    for (const port of service?.spec.ports ?? []) {
      expect(containerPort(container, port.targetPort)).not.toBe(METRICS_PORT)
    }
  })

  it('is given longer to stop than its preStop pause and SHUTDOWN_GRACE_MS together', () => {
    const needed = preStopSeconds(container) + config().SHUTDOWN_GRACE_MS / 1000
    expect(apiPod?.spec.terminationGracePeriodSeconds).toBeGreaterThan(needed)
  })

  it('is reached through a Service, and disrupted one pod at a time, selecting its pods and no others', () => {
    const others = pods.filter((p) => p !== apiPod)
    const [service] = ofKind('Service')
    const [budget] = ofKind('PodDisruptionBudget')
    for (const selector of [service?.spec.selector, budget?.spec.selector.matchLabels]) {
      expect(selectsPod(selector, apiPod?.labels ?? {})).toBe(true)
      for (const other of others) expect(selectsPod(selector, other.labels)).toBe(false)
    }
    for (const port of service?.spec.ports ?? []) {
      expect(containerPort(container, port.targetPort)).toBe(config().PORT)
    }
  })

  it('is scaled on CPU by a HorizontalPodAutoscaler from 2 pods, which owns the replica count', () => {
    const [hpa] = ofKind('HorizontalPodAutoscaler')
    expect(hpa?.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'dispatch-api',
    })
    expect(hpa?.spec.minReplicas).toBeGreaterThanOrEqual(2)
    expect(hpa?.spec.metrics.map((m: { resource?: { name: string } }) => m.resource?.name)).toEqual(['cpu'])
    expect(apiPod?.owner.spec.replicas).toBeUndefined()
  })
})

describe('the worker pools', () => {
  it('run every role of WORKER_QUEUES between them', () => {
    const roles = new Set(workerPods.flatMap((pod) => workerConfig(pod).roles))
    expect([...roles].sort()).toEqual([...parseWorkerConfig({}).roles].sort())
  })

  it.each(workerPods.map((p) => [p.owner.metadata.name, p] as const))(
    '%s serves /metrics to Prometheus and is given longer to stop than its grace',
    (_, pod) => {
      const config = workerConfig(pod)
      expect(config.METRICS_HOST).toBe('0.0.0.0')
      expect(containerPort(pod.containers[0], config.METRICS_PORT as number)).toBe(config.METRICS_PORT)
      expect(pod.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(config.METRICS_PORT),
        'prometheus.io/path': '/metrics',
      })
      const needed = config.SHUTDOWN_GRACE_MS / 1000 + WORKER_BACKSTOP_SECONDS
      expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(needed)
    },
  )

  it('are each scaled by one ScaledObject on Prometheus, never to 0, which owns the replica count', () => {
    const scaled = ofKind('ScaledObject')
    const targets = scaled.map((so) => so.spec.scaleTargetRef.name).sort()
    expect(targets).toEqual(workerPods.map((p) => p.owner.metadata.name).sort())
    for (const so of scaled) {
      expect(so.spec.scaleTargetRef.kind ?? 'Deployment').toBe('Deployment')
      // The backlog gauges come from the pool's own pods: at 0 nothing would report it.
      expect(so.spec.minReplicaCount).toBeGreaterThanOrEqual(1)
      expect(so.spec.maxReplicaCount).toBeGreaterThan(so.spec.minReplicaCount)
      for (const trigger of so.spec.triggers) {
        expect(trigger.type).toBe('prometheus')
        expect(Number(trigger.metadata.threshold)).toBeGreaterThan(0)
        expect(metricSelectors(trigger.metadata.query).length).toBeGreaterThan(0)
      }
    }
    for (const pod of workerPods) expect(pod.owner.spec.replicas).toBeUndefined()
  })
})
