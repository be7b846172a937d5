import { randomBytes } from 'node:crypto'
import { parseApiConfig } from '@dispatch/api'
import { ConfigError } from '@dispatch/runtime/env'
import { parseWorkerConfig } from '@dispatch/worker'
import type { Manifest } from './manifests.ts'

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, read field by field
type Container = any
// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, read field by field
type PodSpec = any

export interface PodOf {
  /** The Deployment or Job. */
  owner: Manifest
  labels: Record<string, string>
  annotations: Record<string, string>
  spec: PodSpec
  containers: Container[]
}

/** The pods the Deployments and Jobs make, with their owner. */
export const podsOf = (manifests: Manifest[]): PodOf[] =>
  manifests
    .filter((m) => m.kind === 'Deployment' || m.kind === 'Job')
    .map((owner) => ({
      owner,
      labels: owner.spec.template.metadata?.labels ?? {},
      annotations: owner.spec.template.metadata?.annotations ?? {},
      spec: owner.spec.template.spec,
      containers: owner.spec.template.spec.containers,
    }))

export interface SecretRef {
  variable: string
  secret: string
  key: string
  optional: boolean
}

/**
 * A container's environment as Kubernetes gives it: the ConfigMaps of `envFrom`, then `env` (plain
 * values and ConfigMap keys), with the Secret references apart.
 */
export function containerEnv(container: Container, manifests: Manifest[]) {
  const configMap = (name: string) => {
    const found = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name)
    if (!found) throw new Error(`ConfigMap ${name} is not among the manifests`)
    return found.data ?? {}
  }
  const values: Record<string, string> = {}
  const secrets: SecretRef[] = []
  for (const from of container.envFrom ?? []) {
    if (!from.configMapRef) throw new Error(`envFrom other than a ConfigMap: ${JSON.stringify(from)}`)
    Object.assign(values, configMap(from.configMapRef.name))
  }
  for (const { name, value, valueFrom } of container.env ?? []) {
    if (value !== undefined) values[name] = String(value)
    else if (valueFrom?.configMapKeyRef) {
      const { name: map, key } = valueFrom.configMapKeyRef
      const found = configMap(map)[key]
      if (found === undefined) throw new Error(`ConfigMap ${map} has no key ${key}`)
      values[name] = found
    } else if (valueFrom?.secretKeyRef) {
      const { name: secret, key, optional = false } = valueFrom.secretKeyRef
      secrets.push({ variable: name, secret, key, optional })
    } else throw new Error(`env ${name}: neither a value, a ConfigMap key nor a Secret key`)
  }
  return { values, secrets }
}

/** A value of each key of `dispatch-secrets`, of the shape its variable asks for. */
export const SAMPLE_SECRETS: Record<string, string> = {
  DATABASE_URL: 'postgres://dispatch:sample@postgres:5432/dispatch',
  REDIS_URL: 'redis://:sample@redis:6379',
  SECRETS_KEY: randomBytes(32).toString('base64'),
  ERASURE_HASH_KEY: randomBytes(32).toString('base64'),
  ADMIN_TOKENS: `ops=${randomBytes(24).toString('base64url')}`,
  SMTP_URL: 'smtp://dispatch:sample@smtp:587',
  SECRETS_KEY_PREVIOUS: randomBytes(32).toString('base64'),
  WHATSAPP_ACCESS_TOKEN: 'EAAG-sample-access-token',
  WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  WHATSAPP_VERIFY_TOKEN: 'sample-verify-token',
  WHATSAPP_APP_SECRET: 'sample-app-secret',
  METRICS_TOKEN: 'sample-metrics-token-0123456789',
}

/** The container's environment with sample secrets: every one, or (`required`) the non-optional ones. */
export function withSecrets(
  env: ReturnType<typeof containerEnv>,
  which: 'all' | 'required',
  values: Record<string, string> = SAMPLE_SECRETS,
) {
  const secrets = env.secrets.filter((ref) => which === 'all' || !ref.optional)
  return {
    ...env.values,
    ...Object.fromEntries(
      secrets.map((ref) => [ref.variable, values[ref.key] ?? SAMPLE_SECRETS[ref.key] ?? '']),
    ),
  } as Record<string, string>
}

type Parse = (env: Record<string, string | undefined>) => object

/** The app each image runs, by the configuration parser it boots with. */
export const PARSERS: Record<string, Parse> = {
  'dispatch-api': parseApiConfig,
  'dispatch-worker': parseWorkerConfig,
}

/**
 * The variables of `env` the app does not read. The parsed configuration holds every variable of
 * the app's schema that was given; the few it turns into something else (ADMIN_TOKENS,
 * WORKER_QUEUES, …) are told by giving them a value no schema accepts: the app refuses it, naming
 * the variable, while one it does not know is silently ignored.
 */
export function unknownVariables(parse: Parse, env: Record<string, string>): string[] {
  const parsed = parse(env)
  const refuses = (name: string) => {
    try {
      parse({ ...env, [name]: '\u0001' })
      return false
    } catch (error) {
      return error instanceof ConfigError && error.message.includes(`\n  ${name}:`)
    }
  }
  return Object.keys(env).filter((name) => !(name in parsed) && !refuses(name))
}

/** The container port a probe or a Service's targetPort names (by name or number). */
export function containerPort(container: Container, port: string | number): number | undefined {
  const ports: { name?: string; containerPort: number }[] = container.ports ?? []
  return typeof port === 'number'
    ? ports.find((p) => p.containerPort === port)?.containerPort
    : ports.find((p) => p.name === port)?.containerPort
}

/** Seconds a container's preStop hook holds the pod before SIGTERM (`sleep N`, or the sleep action). */
export function preStopSeconds(container: Container): number {
  const preStop = container.lifecycle?.preStop
  if (!preStop) return 0
  if (preStop.sleep) return Number(preStop.sleep.seconds)
  const [command, seconds] = preStop.exec?.command ?? []
  if (command === 'sleep' && Number.isFinite(Number(seconds))) return Number(seconds)
  throw new Error(`a preStop hook whose length is unknown: ${JSON.stringify(preStop)}`)
}

/** Whether every label a selector asks for is on the pod. */
export const selectsPod = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v)
