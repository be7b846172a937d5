import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { Deployment } from 'kubernetes-models/apps/v1/Deployment'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import { Job } from 'kubernetes-models/batch/v1/Job'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap'
import { Secret } from 'kubernetes-models/v1/Secret'
import { Service } from 'kubernetes-models/v1/Service'
import { parseAllDocuments } from 'yaml'

export const MANIFESTS_DIR = fileURLToPath(new URL('../kubernetes', import.meta.url))

/** The typed model of every kind the manifests may hold; any other kind is an error. */
const MODELS = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'batch/v1/Job': Job,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
} as const

export interface Manifest {
  /** Its file, relative to deploy/kubernetes. */
  file: string
  apiVersion: string
  kind: string
  metadata: { name: string; labels?: Record<string, string> }
  // biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, narrowed by each test
  spec?: any
  data?: Record<string, string>
  stringData?: Record<string, string>
  /** A Kustomization's. */
  resources?: string[]
  images?: { name: string; newName?: string; newTag?: string }[]
}

/** Every YAML document under deploy/kubernetes (Kustomizations apart), parsed; a YAML error throws. */
export function loadManifests(): { manifests: Manifest[]; kustomizations: Manifest[] } {
  const files = (readdirSync(MANIFESTS_DIR, { recursive: true }) as string[])
    .filter((file) => /\.ya?ml$/.test(file))
    .sort()
  const all = files.flatMap((file) =>
    parseAllDocuments(readFileSync(join(MANIFESTS_DIR, file), 'utf8')).flatMap((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`)
      const value = doc.toJS() as Omit<Manifest, 'file'> | null
      return value ? [{ ...value, file }] : []
    }),
  )
  return {
    manifests: all.filter((m) => m.kind !== 'Kustomization'),
    kustomizations: all.filter((m) => m.kind === 'Kustomization'),
  }
}

/** The directory of a manifest's file, relative to deploy/kubernetes ('' for the top one). */
export const dirOf = (file: string) => relative(MANIFESTS_DIR, join(MANIFESTS_DIR, file, '..'))

/**
 * Builds the document with its typed model and validates it against the Kubernetes (or KEDA)
 * schema; then rejects any field the schema does not know, as `kubectl apply` does (server-side
 * strict field validation): the schemas allow unknown fields, so a typo'd `readinesProbe` would
 * otherwise pass. Throws naming what is wrong.
 */
export function validateManifest({ file: _file, ...document }: Manifest): void {
  const Model = MODELS[`${document.apiVersion}/${document.kind}` as keyof typeof MODELS]
  if (!Model) throw new Error(`no model for ${document.apiVersion} ${document.kind}`)
  const model = new Model(document as never)
  model.validate()
  const unknown = unknownFields((data) => Model.prototype.validate.call(data), model.toJSON())
  if (unknown.length > 0) throw new Error(`fields the schema does not know: ${unknown.join(', ')}`)
}

/**
 * The fields of `data` that a schema's validator never looked at. Kubernetes' schemas list every
 * field an object may have and the compiled validator reads each listed one, while free-form maps
 * (labels, ConfigMap data) are iterated: so a key never read, in an object never iterated, is a
 * field the schema does not have.
 */
function unknownFields(validate: (data: unknown) => void, data: unknown): string[] {
  const objects: { path: string; keys: string[]; read: Set<PropertyKey>; iterated: boolean }[] = []
  const track = (value: unknown, path: string): unknown => {
    if (value === null || typeof value !== 'object') return value
    if (Array.isArray(value)) return value.map((item, i) => track(item, `${path}/${i}`))
    const target = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, track(v, `${path}/${k}`)]))
    const seen = { path, keys: Object.keys(target), read: new Set<PropertyKey>(), iterated: false }
    objects.push(seen)
    return new Proxy(target, {
      get: (t, key, receiver) => {
        seen.read.add(key)
        return Reflect.get(t, key, receiver)
      },
      has: (t, key) => {
        seen.read.add(key)
        return Reflect.has(t, key)
      },
      ownKeys: (t) => {
        seen.iterated = true
        return Reflect.ownKeys(t)
      },
    })
  }
  validate(track(data, ''))
  const unknown = objects.flatMap(({ path, keys, read, iterated }) =>
    iterated ? [] : keys.filter((key) => !read.has(key)).map((key) => `${path}/${key}`),
  )
  // Only the outermost: what lies inside an unknown field was never looked at either.
  return unknown.filter((path) => !unknown.some((outer) => path.startsWith(`${outer}/`)))
}

/** One metric selector of a PromQL expression: `name{label="value", label=~"regex"}`. */
export interface MetricSelector {
  name: string
  matchers: { label: string; op: '=' | '!=' | '=~' | '!~'; value: string }[]
}

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right'])
const OPERATORS = new Set(['and', 'or', 'unless', 'bool', 'offset'])

/**
 * The metric selectors of a PromQL expression: every name that is not a function, an aggregation,
 * a keyword or a grouping's label list. Enough for the queries the ScaledObjects hold.
 */
export function metricSelectors(query: string): MetricSelector[] {
  const tokens: string[] =
    query.match(/"(?:[^"\\]|\\.)*"|[a-zA-Z_:][a-zA-Z0-9_:]*|\d[\w.]*|\[[^\]]*\]|\S/g) ?? []
  const selectors: MetricSelector[] = []
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string
    if (!/^[a-zA-Z_:]/.test(token) || OPERATORS.has(token)) continue
    if (GROUPING.has(token)) {
      while (i < tokens.length && tokens[i] !== ')') i++
      continue
    }
    // A function or an aggregation: `rate(…)`, `sum(…)`, `max by (…) (…)`.
    if (tokens[i + 1] === '(' || GROUPING.has(tokens[i + 1] as string)) continue
    const selector: MetricSelector = { name: token, matchers: [] }
    if (tokens[i + 1] === '{') {
      const close = tokens.indexOf('}', i)
      const body = tokens.slice(i + 2, close).join('')
      for (const [, label, op, value] of body.matchAll(/([a-zA-Z_]\w*)(=~|!~|!=|=)"((?:[^"\\]|\\.)*)"/g)) {
        selector.matchers.push({
          label: label as string,
          op: op as MetricSelector['matchers'][number]['op'],
          value: (value as string).replace(/\\(.)/g, '$1'),
        })
      }
      i = close
    }
    selectors.push(selector)
  }
  return selectors
}

/** Whether a sample `name{labels}` is one the selector picks (a missing label is the empty string). */
export function selects(
  selector: MetricSelector,
  sample: { name: string; labels: Record<string, string> },
): boolean {
  if (sample.name !== selector.name) return false
  return selector.matchers.every(({ label, op, value }) => {
    const actual = sample.labels[label] ?? ''
    const regex = new RegExp(`^(?:${value})$`)
    if (op === '=') return actual === value
    if (op === '!=') return actual !== value
    if (op === '=~') return regex.test(actual)
    return !regex.test(actual)
  })
}
