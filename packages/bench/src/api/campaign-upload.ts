/**
 * A campaign's audience upload (issue 43) against Postgres' own COPY of the same file. A CSV of
 * BENCH_UPLOAD_ROWS rows (default 1,000,000: phone, first_name, date, every row valid and distinct:
 * the most work per row) is uploaded to `PUT /api/third-party/campaigns/:id/audience` of the API in
 * a child process, and `COPY … FROM STDIN (FORMAT csv, HEADER)` of the same file into a bare table
 * (three text columns, no index), rounds alternating; the medians compared as rows per second.
 * Aim ≥ 0.5. Beside them, the floor of the table itself: COPY of the rows exactly as a first upload
 * writes them (COPY's binary format: campaign_recipients' columns, its key, the taken lines in
 * blocks as they came; a table of the campaign's own, its key built after, attached) from a file,
 * which is what the API's own work (HTTP, parsing, judging) adds to.
 * Each round prints the API process's CPU time during the upload, and Postgres' (its backends' CPU
 * time, /proc) during each step: their own work, whatever the machine's load. And the API's memory: its peak RSS during the upload over its RSS before
 * (/proc/<pid>/status VmHWM after clearing it, Linux), aim ≤ 100 MB.
 *
 *   pnpm --filter @dispatch/bench bench:campaign-upload   (BENCH_UPLOAD_ROWS, BENCH_ROUNDS)
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import postgres from 'postgres'
import { forkChild } from '../harness/child.ts'
import { printComparison, printFigure } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const rows = Number(process.env.BENCH_UPLOAD_ROWS ?? 1_000_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 2)

const world = await createBenchWorld('campaign_upload')
const file = join(tmpdir(), `${world.queuePrefix}.csv`)

/** The audience: distinct valid phones, two variables, ~40 bytes a row. */
async function writeAudience(path: string, count: number) {
  const out = createWriteStream(path)
  out.write('phone,first_name,date\n')
  let chunk = ''
  for (let i = 0; i < count; i++) {
    chunk += `+5511${String(900_000_000 + i)},Name${i},2026-12-${String((i % 28) + 1).padStart(2, '0')}\n`
    if (chunk.length > 1 << 16) {
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
      chunk = ''
    }
  }
  out.end(chunk)
  await new Promise<void>((resolve) => out.once('finish', () => resolve()))
}

const server = await forkChild<{ url: string; key: string; campaignIds: string[] }>(
  new URL('./campaign-upload-server.ts', import.meta.url),
  {
    what: 'API',
    env: {
      DATABASE_URL: world.databaseUrl,
      REDIS_URL: world.redisUrl,
      QUEUE_PREFIX: world.queuePrefix,
      BENCH_CAMPAIGNS: String(2 * rounds + 1),
    },
  },
)
const { url, key, campaignIds } = server.ready
const pid = server.process.pid as number

const memory = async () => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))?.[1] ?? 0)
  return { rss: kb('VmRSS') * 1024, peak: kb('VmHWM') * 1024 }
}

function upload(path: string, campaignId: string): Promise<number> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/third-party/campaigns/${campaignId}/audience`,
      { method: 'PUT', headers: { 'x-api-key': key, 'content-type': 'text/csv' } },
      (res) => {
        let body = ''
        res.on('data', (c) => {
          body += c
        })
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`upload answered ${res.statusCode}: ${body}`)),
        )
      },
    )
    req.on('error', reject)
    pipeline(createReadStream(path), req).catch(reject)
  })
}

const sql = postgres(world.databaseUrl, { max: 1, onnotice: () => {} })
async function copyBare(path: string): Promise<number> {
  await sql`drop table if exists bare_audience`
  await sql`create table bare_audience (phone text, first_name text, date text)`
  await sql`checkpoint`
  const started = performance.now()
  const copy = await sql`copy bare_audience from stdin with (format csv, header true)`.writable()
  await pipeline(createReadStream(path), copy)
  return performance.now() - started
}

/**
 * The CPU time (ms) every backend of the bench's database has used so far (Linux: /proc, Postgres
 * on this machine; undefined elsewhere): read before and after a step, what Postgres spent on it,
 * whatever the machine's load. The API's pool and the bench's own connection stay open throughout.
 */
async function postgresCpu(): Promise<number | undefined> {
  const backends = await sql<
    { pid: number }[]
  >`select pid from pg_stat_activity where datname = current_database()`
  let ticks = 0
  for (const { pid } of backends) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
    if (stat === undefined) return undefined
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks * 10
}
const spent = async <T>(step: () => Promise<T>): Promise<[T, number | undefined]> => {
  const before = await postgresCpu()
  const result = await step()
  const after = await postgresCpu()
  return [result, before === undefined || after === undefined ? undefined : after - before]
}

/**
 * The rows as the upload writes them (queries/campaign-audience-copy.ts: COPY's binary format), for
 * `campaignId`: every line of this file is plain and taken, so blocks of consecutive lines, each of
 * at most 1,900 bytes less its other fields (`BLOCK_ROW_BYTES`), the lines as they are in the file.
 */
async function writeTableRows(csv: string, path: string, campaignId: string) {
  const lines = (await readFile(csv, 'utf8')).split('\n').slice(1, -1)
  const out = createWriteStream(path)
  const campaign = Buffer.from(campaignId.replaceAll('-', ''), 'hex')
  const int32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeInt32BE(n)
    return b
  }
  const text = (value: string | null) =>
    value === null ? int32(-1) : Buffer.concat([int32(Buffer.byteLength(value)), Buffer.from(value)])
  const fields = ['phone', 'first_name', 'date'].map((f) => Buffer.from(f))
  const array = Buffer.concat([
    ...[1, 0, 25, fields.length, 1].map(int32),
    ...fields.flatMap((f) => [int32(f.length), f]),
  ])
  const blockBytes = 1900 - 100 - (array.length + 4)
  out.write(Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]))
  let chunk: Buffer[] = []
  let size = 0
  for (let i = 0; i < lines.length; ) {
    let bytes = (lines[i] as string).length
    let j = i + 1
    while (j < lines.length && bytes + 1 + (lines[j] as string).length <= blockBytes) {
      bytes += 1 + (lines[j] as string).length
      j++
    }
    const row = Buffer.concat([
      Buffer.from([0, 12]),
      int32(16),
      campaign,
      int32(4),
      int32(i + 2),
      text(null),
      text(null),
      text(null),
      text('pending'),
      text(null),
      text(null),
      text(null),
      int32(4),
      int32(j - i),
      text(lines.slice(i, j).join('\n')),
      int32(array.length),
      array,
    ])
    i = j
    chunk.push(row)
    size += row.length
    if (size > 1 << 16) {
      if (!out.write(Buffer.concat(chunk)))
        await new Promise<void>((resolve) => out.once('drain', () => resolve()))
      chunk = []
      size = 0
    }
  }
  out.end(Buffer.concat([...chunk, Buffer.from([0xff, 0xff])]))
  await new Promise<void>((resolve) => out.once('finish', () => resolve()))
}

/** COPY of the rows as a first upload writes them: a table of the campaign's own, its key, attached. */
async function copyTable(path: string, campaignId: string): Promise<number> {
  await sql`checkpoint`
  const table = `campaign_recipients_${campaignId.replaceAll('-', '')}`
  const [{ partitioned } = { partitioned: false }] = await sql<{ partitioned: boolean }[]>`
    select relkind = 'p' as partitioned from pg_class where relname = 'campaign_recipients'`
  const started = performance.now()
  // Before 0044 (a run of an older tree beside this one): the rows straight into the table.
  if (!partitioned) {
    const copy = await sql`
      copy campaign_recipients (campaign_id, line, phone, user_id, variables, state, reason, detail, raw)
      from stdin (format binary)`.writable()
    await pipeline(createReadStream(path), copy)
    return performance.now() - started
  }
  await sql.begin(async (tx) => {
    await tx.unsafe(`create table ${table} (like campaign_recipients including defaults including constraints,
      constraint ${table}_campaign check (campaign_id = '${campaignId}'))`)
    const copy = await tx
      .unsafe(`
      copy ${table} (campaign_id, line, phone, user_id, variables, state, reason, detail, raw, lines, block, block_fields)
      from stdin (format binary, freeze)`)
      .writable()
    await pipeline(createReadStream(path), copy)
    await tx.unsafe(`alter table ${table} add constraint ${table}_pkey primary key (campaign_id, line)`)
    await tx.unsafe(
      `alter table campaign_recipients attach partition ${table} for values in ('${campaignId}')`,
    )
  })
  return performance.now() - started
}

try {
  // Warm-up: the API's code paths and pools, then its peak memory counted from here.
  const warm = join(tmpdir(), `${world.queuePrefix}-warm.csv`)
  await writeAudience(warm, 20_000)
  await upload(warm, campaignIds[rounds] as string)
  await rm(warm)
  await writeAudience(file, rows)

  const api: number[] = []
  const bare: number[] = []
  const table: number[] = []
  /** Postgres' CPU for the upload and for the floor, over its CPU for the bare COPY, a round each. */
  const pgRatios: { upload: number; floor: number }[] = []
  let growth = 0
  for (let round = 0; round < rounds; round++) {
    const [bareMs, bareCpu] = await spent(() => copyBare(file))
    bare.push(bareMs)
    await sql`checkpoint`
    await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => {})
    const before = await memory()
    const cpuBefore = await server.cpuSeconds()
    const [apiMs, apiPgCpu] = await spent(() => upload(file, campaignIds[round] as string))
    api.push(apiMs)
    const cpuAfter = await server.cpuSeconds()
    const after = await memory()
    growth = Math.max(growth, after.peak - before.rss)
    const tableFile = `${file}.tsv`
    await writeTableRows(file, tableFile, campaignIds[rounds + 1 + round] as string)
    const [tableMs, tableCpu] = await spent(() =>
      copyTable(tableFile, campaignIds[rounds + 1 + round] as string),
    )
    table.push(tableMs)
    if (bareCpu && apiPgCpu !== undefined && tableCpu !== undefined)
      pgRatios.push({ upload: apiPgCpu / bareCpu, floor: tableCpu / bareCpu })
    await rm(tableFile)
    const ms = (n: number | undefined) => (n === undefined ? '?' : n.toFixed(0))
    console.log(
      `round ${round + 1}: bare COPY ${ms(bareMs)} ms, API ${ms(apiMs)} ms, ` +
        `COPY into campaign_recipients ${ms(tableMs)} ms, ` +
        `API CPU ${cpuAfter === undefined || cpuBefore === undefined ? '?' : ((cpuAfter - cpuBefore) * 1000).toFixed(0)} ms, API RSS ${(before.rss / 2 ** 20).toFixed(0)} MB → peak ${(after.peak / 2 ** 20).toFixed(0)} MB; ` +
        `Postgres CPU: bare COPY ${ms(bareCpu)} ms, upload ${ms(apiPgCpu)} ms, floor ${ms(tableCpu)} ms`,
    )
  }
  printComparison({
    name: `api/campaign-upload: ${rows.toLocaleString('en')}-row CSV`,
    figure: rows / (median(api) / 1000),
    baseline: rows / (median(bare) / 1000),
    unit: 'rows/s',
    better: 'higher',
    aim: '≥ 0.5',
  })
  printComparison({
    name: `api/campaign-upload: ${rows.toLocaleString('en')}-row CSV against the table's floor`,
    figure: rows / (median(api) / 1000),
    baseline: rows / (median(table) / 1000),
    unit: 'rows/s',
    better: 'higher',
  })
  if (pgRatios.length > 0) {
    printFigure({
      name: "api/campaign-upload: Postgres' CPU for the upload over its CPU for the bare COPY",
      figure: median(pgRatios.map((r) => r.upload)),
      unit: '×',
      better: 'lower',
    })
    printFigure({
      name: "api/campaign-upload: Postgres' CPU for the floor over its CPU for the bare COPY",
      figure: median(pgRatios.map((r) => r.floor)),
      unit: '×',
      better: 'lower',
    })
  }
  printFigure({
    name: 'api/campaign-upload: API memory growth',
    figure: growth / 2 ** 20,
    unit: 'MB',
    better: 'lower',
    aim: '≤ 100',
  })
} finally {
  await sql.end({ timeout: 5 })
  await server.stop()
  await rm(file, { force: true })
  await world.drop()
}
