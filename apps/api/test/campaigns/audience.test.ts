import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import type { CampaignAudienceUploaded } from '@dispatch/contracts'
import { addSuppression, owned, replaceCampaignAudience } from '@dispatch/db'
import { recipientHasher, suppressionOwner } from '@dispatch/runtime'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readAudience } from '../../src/campaigns/audience/read-audience.ts'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { syncedSender } from '../templates/setup.ts'

const secretsKey = randomBytes(32).toString('base64')

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let sender: { id: string; phoneNumberId: string }
type Key = { id: string; key: string; tenantId: string }
let key: Key
let otherTenant: Key

/** An approved key of `tenantId` sending through the test's sender. */
async function tenantKey(tenantId: string, scopes = ['manage:campaigns', 'send:template']): Promise<Key> {
  const created = await activeKey(app, { scopes, tenantId })
  const bound = await app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${created.id}`,
    headers: asAdmin(),
    payload: { senderId: sender.id },
  })
  expect(bound.statusCode, bound.body).toBe(200)
  return { id: created.id, key: created.key, tenantId }
}

/** A draft campaign of `owner` (the create route is another file's: made through the owned layer). */
async function draftCampaign(owner: Key, templateId = 'appointment_reminder') {
  const row = await owned(app.deps.db, {
    apiKeyId: owner.id,
    tenantId: owner.tenantId,
    senderId: sender.id,
  }).campaigns.create(
    {
      name: 'December',
      template: { templateId, language: 'en_US' },
      startAt: null,
      validitySeconds: null,
      quietHours: null,
    },
    new Date(),
  )
  return row.id
}

const upload = (id: string, body: string, type = 'text/csv', as: Key = key) =>
  app.inject({
    method: 'PUT',
    url: `/api/third-party/campaigns/${id}/audience`,
    headers: { 'x-api-key': as.key, 'content-type': type },
    payload: body,
  })

const rowsOf = (id: string) =>
  world.sql<
    {
      line: number
      phone: string | null
      user_id: string | null
      state: string
      reason: string | null
      detail: string | null
      raw: string | null
      variables: Record<string, string> | null
    }[]
  >`select line, phone, user_id, state::text, reason, detail, raw, variables::jsonb as variables from campaign_recipient_lines where campaign_id = ${id} order by line`

let phones = 0
const phone = () => `+551198${String(Date.now()).slice(-5)}${String(phones++).padStart(2, '0')}`

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, { SECRETS_KEY: secretsKey, WHATSAPP_API_URL: fake.url })
  sender = await syncedSender(app, fake)
  key = await tenantKey('acme')
  otherTenant = await tenantKey('globex')
})

afterAll(async () => {
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('PUT /api/third-party/campaigns/:id/audience', () => {
  it('takes a CSV: every row pending with its variables, the campaign ready', async () => {
    const id = await draftCampaign(key)
    const [a, b] = [phone(), phone()]
    const res = await upload(id, `phone,first_name,date\n${a},Ana,Tuesday\r\n${b},Bruno,Friday\n`)
    expect(res.statusCode, res.body).toBe(200)
    const body = res.json<CampaignAudienceUploaded>()
    expect(body).toMatchObject({
      campaignId: id,
      status: 'ready',
      audience: { rows: 2, taken: 2, skipped: 0, skippedByReason: {}, format: 'csv' },
    })
    const rows = await rowsOf(id)
    expect(rows.map((r) => [r.line, r.phone, r.state, r.variables])).toEqual([
      [2, a, 'pending', { first_name: 'Ana', date: 'Tuesday' }],
      [3, b, 'pending', { first_name: 'Bruno', date: 'Friday' }],
    ])
    const [campaign] = await world.sql`select status::text, audience from campaigns where id = ${id}`
    expect(campaign?.status).toBe('ready')
    expect(campaign?.audience).toMatchObject({ rows: 2, taken: 2 })
  })

  it('keeps runs of plain taken lines in blocks, read back line by line, a page at a time', async () => {
    const id = await draftCampaign(key)
    const phones = Array.from({ length: 150 }, phone)
    const lines = phones.map((p, i) => `${p},Name${i},Day ${i}`)
    lines[40] = `${phones[3]},Again,Monday` // line 42: a duplicate of line 5
    lines[146] = `${phones[146]},"Quoted, name",Friday` // line 148: read as text, and the rest of the chunk
    lines[100] = '' // line 102: blank
    lines[120] = `+12,Short,Sunday` // line 122: invalid
    const res = await upload(id, `phone,first_name,date\n${lines.join('\n')}\n`)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience).toMatchObject({
      rows: 149,
      taken: 147,
      skippedByReason: { duplicate: 1, invalid_recipient: 1 },
    })
    // A handful of stored rows, not a row a line: the blocks, and the lines apart from them (those
    // skipped, and from a quoted line to the end of its chunk, read as text).
    const [{ stored } = { stored: 0 }] = await world.sql<{ stored: number }[]>`
      select count(*)::int as stored from campaign_recipients where campaign_id = ${id}`
    expect(stored).toBeLessThan(20)
    const expected = lines.flatMap((text, i) => {
      const line = i + 2
      if (line === 42 || line === 102 || line === 122) return []
      const [p, name, date] = line === 148 ? [phones[146], 'Quoted, name', 'Friday'] : text.split(',')
      return [[line, p, 'pending', { first_name: name, date }]]
    })
    const rows = await rowsOf(id)
    expect(
      rows.filter((r) => r.state === 'pending').map((r) => [r.line, r.phone, r.state, r.variables]),
    ).toEqual(expected)
    expect(rows.filter((r) => r.state === 'skipped').map((r) => [r.line, r.reason])).toEqual([
      [42, 'duplicate'],
      [122, 'invalid_recipient'],
    ])
    // The recipients' pages, 7 at a time, start and end inside blocks and read every line once.
    const paged: unknown[] = []
    let after: number | null = 0
    while (after !== null) {
      const page: Awaited<ReturnType<typeof app.inject>> = await app.inject({
        method: 'GET',
        url: `/api/third-party/campaigns/${id}/recipients?take=7&after=${after}&state=pending`,
        headers: { 'x-api-key': key.key },
      })
      expect(page.statusCode, page.body).toBe(200)
      const body: { data: { line: number; phone: string; variables: unknown }[]; next: number | null } =
        page.json()
      paged.push(...body.data.map((r) => [r.line, r.phone, 'pending', r.variables]))
      after = body.next
    }
    expect(paged).toEqual(expected)
  })

  it('reads a block by its header: columns in any order, a clientReference and a blank userId not kept', async () => {
    const id = await draftCampaign(key)
    const [a, b] = [phone(), phone()]
    const res = await upload(
      id,
      `clientReference,date,Phone,userId,first_name\nref-1,Tuesday, ${a} ,,Ana\r\nref-2,Friday,${b},, Bruno\n`,
    )
    expect(res.statusCode, res.body).toBe(200)
    expect((await rowsOf(id)).map((r) => [r.line, r.phone, r.user_id, r.variables])).toEqual([
      [2, a, null, { first_name: 'Ana', date: 'Tuesday' }],
      [3, b, null, { first_name: ' Bruno', date: 'Friday' }],
    ])
    const stored = await world.sql`select lines from campaign_recipients where campaign_id = ${id}`
    expect(stored.map((r) => r.lines)).toEqual([2])
  })

  it('takes NDJSON: a line per recipient, phone or userId', async () => {
    const id = await draftCampaign(key)
    const a = phone()
    const lines = [
      JSON.stringify({ phone: a, variables: { first_name: 'Ana', date: 'Tuesday' } }),
      '',
      JSON.stringify({ userId: 'US.13491208655302741918', variables: { first_name: 'Bo', date: 'Friday' } }),
    ]
    const res = await upload(id, `${lines.join('\n')}\n`, 'application/x-ndjson')
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience).toMatchObject({
      rows: 2,
      taken: 2,
      format: 'ndjson',
    })
    const rows = await rowsOf(id)
    expect(rows.map((r) => [r.line, r.phone, r.user_id, r.state])).toEqual([
      [1, a, null, 'pending'],
      [3, null, 'US.13491208655302741918', 'pending'],
    ])
  })

  it('reads quoted CSV fields: commas, doubled quotes and newlines inside them', async () => {
    const id = await draftCampaign(key)
    const [a, b] = [phone(), phone()]
    const csv =
      `"phone","first_name","date"\n` + `${a},"Ana, ""the boss""","Tuesday\nat 10"\n` + `"${b}",Bruno,Friday`
    const res = await upload(id, csv)
    expect(res.statusCode, res.body).toBe(200)
    const rows = await rowsOf(id)
    expect(rows.map((r) => [r.line, r.phone, r.variables])).toEqual([
      [2, a, { first_name: 'Ana, "the boss"', date: 'Tuesday\nat 10' }],
      [3, b, { first_name: 'Bruno', date: 'Friday' }],
    ])
  })

  it('skips each bad row with its line, reason and the column at fault; reports them in line order', async () => {
    const id = await draftCampaign(key)
    const [ok, dup, own, admin, tenants, erased, others] = Array.from({ length: 7 }, phone)
    const entry = { phoneNumberId: sender.phoneNumberId, senderId: sender.id, reason: null }
    const db = app.deps.db
    await addSuppression(db, {
      ...entry,
      recipient: own as string,
      scope: 'all',
      source: 'keyword',
      createdBy: 'platform',
    })
    await addSuppression(db, {
      ...entry,
      recipient: admin as string,
      scope: 'all',
      source: 'admin',
      createdBy: 'admin:ana',
    })
    await addSuppression(db, {
      ...entry,
      recipient: tenants as string,
      scope: 'all',
      source: 'api',
      createdBy: `key:${key.id}`,
      apiKeyId: key.id,
      tenantId: 'acme',
    })
    // Another tenant's entry blocks only its own sends.
    await addSuppression(db, {
      ...entry,
      recipient: others as string,
      scope: 'all',
      source: 'api',
      createdBy: `key:${otherTenant.id}`,
      apiKeyId: otherTenant.id,
      tenantId: 'globex',
    })
    // An erased recipient's opt-out is kept hashed, and still blocks.
    const hash = recipientHasher({})
    await addSuppression(db, {
      ...entry,
      recipient: hash(erased as string),
      scope: 'all',
      source: 'keyword',
      createdBy: 'platform',
    })
    const csv = [
      'phone,first_name,date', // 1
      `${ok},Ana,Tuesday`, // 2
      '+12,Ana,Tuesday', // 3 invalid phone
      `${dup},,Tuesday`, // 4 empty variable
      `${dup},Ana`, // 5 a field short
      `${dup},Ana,Tuesday`, // 6 taken (line 4 and 5 were skipped)
      `${dup},Bo,Friday`, // 7 duplicate of 6
      `${own},Ana,Tuesday`, // 8 opted out
      `${admin},Ana,Tuesday`, // 9 the service's list
      `${tenants},Ana,Tuesday`, // 10 the tenant's list
      `${erased},Ana,Tuesday`, // 11 opted out, kept hashed
      `${others},Ana,Tuesday`, // 12 another tenant's entry: taken
      `${ok},"Ana"x,Tuesday`, // 13 text after a closing quote
    ].join('\n')
    const res = await upload(id, csv)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience).toMatchObject({
      rows: 12,
      taken: 3,
      skipped: 9,
      skippedByReason: {
        invalid_recipient: 1,
        invalid_variables: 1,
        malformed_line: 2,
        duplicate: 1,
        opted_out: 2,
        suppressed: 2,
      },
    })
    const rows = await rowsOf(id)
    const byLine = Object.fromEntries(rows.map((r) => [r.line, r]))
    expect(rows.filter((r) => r.state === 'pending').map((r) => r.line)).toEqual([2, 6, 12])
    expect(byLine[3]).toMatchObject({
      reason: 'invalid_recipient',
      detail: expect.stringMatching(/^phone: "\+12"/),
      raw: '+12,Ana,Tuesday',
      phone: null,
    })
    expect(byLine[4]).toMatchObject({
      reason: 'invalid_variables',
      detail: 'first_name is empty',
      phone: dup,
    })
    expect(byLine[5]).toMatchObject({ reason: 'malformed_line', detail: '2 fields; the header has 3' })
    expect(byLine[7]).toMatchObject({
      reason: 'duplicate',
      detail: 'phone: the same recipient as line 6',
      raw: `${dup},Bo,Friday`,
      variables: null,
    })
    expect(byLine[8]).toMatchObject({ reason: 'opted_out', detail: expect.stringMatching(/^phone: /) })
    expect(byLine[9]).toMatchObject({ reason: 'suppressed' })
    expect(byLine[10]).toMatchObject({ reason: 'suppressed' })
    expect(byLine[11]).toMatchObject({ reason: 'opted_out' })
    expect(byLine[13]).toMatchObject({ reason: 'malformed_line', detail: 'text follows a closing quote' })

    const report = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${id}/skipped`,
      headers: { 'x-api-key': key.key },
    })
    expect(report.statusCode, report.body).toBe(200)
    expect(report.headers['content-type']).toMatch(/^text\/csv/)
    const lines = report.body.trimEnd().split('\r\n')
    expect(lines[0]).toBe('line,reason,detail,raw')
    expect(lines.slice(1).map((l) => Number(l.split(',')[0]))).toEqual([3, 4, 5, 7, 8, 9, 10, 11, 13])
    expect(lines).toContain(`13,malformed_line,text follows a closing quote,"${ok},""Ana""x,Tuesday"`)
  })

  it('judges alike with a suppression list too long to read whole, joined after the COPY', async () => {
    const [ok, blocked] = [phone(), phone()]
    await addSuppression(app.deps.db, {
      phoneNumberId: sender.phoneNumberId,
      senderId: sender.id,
      recipient: blocked,
      scope: 'all',
      source: 'keyword',
      reason: null,
      createdBy: 'platform',
    })
    const csv = `phone,first_name,date\n${ok},Ana,Tuesday\n${blocked},Bo,Friday\n${ok},Cy,Monday\n`
    const replace = async (entriesReadWhole: number) => {
      const id = await draftCampaign(key)
      const replaced = await replaceCampaignAudience(
        app.deps.db,
        { campaignId: id, from: ['draft', 'ready'] },
        readAudience(Readable.from([Buffer.from(csv)]), 'csv', null),
        {
          format: 'csv',
          consent: {
            from: { phoneNumberId: sender.phoneNumberId },
            owner: suppressionOwner({ apiKeyId: key.id, tenantId: key.tenantId }),
            marketing: false,
            hash: recipientHasher({}),
          },
          at: new Date(),
          entriesReadWhole,
        },
      )
      return { replaced, rows: await rowsOf(id) }
    }
    const read = await replace(10)
    const joined = await replace(0)
    for (const { replaced } of [read, joined]) {
      expect(replaced).toMatchObject({
        outcome: 'replaced',
        audience: { rows: 3, taken: 1, skipped: 2, skippedByReason: { opted_out: 1, duplicate: 1 } },
      })
    }
    const judged = (rows: typeof read.rows) =>
      rows.map((r) => [r.line, r.state, r.reason, r.detail, r.variables])
    expect(judged(joined.rows)).toEqual(judged(read.rows))
    expect(judged(read.rows)).toEqual([
      [2, 'pending', null, null, { first_name: 'Ana', date: 'Tuesday' }],
      [3, 'skipped', 'opted_out', "phone: the recipient opted out of this sender's messages", null],
      [4, 'skipped', 'duplicate', 'phone: the same recipient as line 2', null],
    ])
    // A skipped row keeps its line either way; a taken one only when the join could still skip it.
    expect(read.rows.map((r) => r.raw)).toEqual([null, `${blocked},Bo,Friday`, `${ok},Cy,Monday`])
    expect(joined.rows.map((r) => r.raw)).toEqual([
      `${ok},Ana,Tuesday`,
      `${blocked},Bo,Friday`,
      `${ok},Cy,Monday`,
    ])
  })

  it("skips a recipient's marketing opt-out for a marketing template only", async () => {
    const marketingOnly = phone()
    await addSuppression(app.deps.db, {
      phoneNumberId: sender.phoneNumberId,
      senderId: sender.id,
      recipient: marketingOnly,
      scope: 'marketing',
      source: 'user_preferences',
      reason: null,
      createdBy: 'platform',
    })
    const promo = await draftCampaign(key, 'we_miss_you')
    const res = await upload(promo, `phone,1\n${marketingOnly},20%\n`)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience.skippedByReason).toEqual({ opted_out: 1 })
    const reminder = await draftCampaign(key)
    const taken = await upload(reminder, `phone,first_name,date\n${marketingOnly},Ana,Tuesday\n`)
    expect(taken.json<CampaignAudienceUploaded>().audience).toMatchObject({ taken: 1, skipped: 0 })
  })

  it('judges NDJSON lines: unreadable, not an object, a variable missing or not in the template', async () => {
    const id = await draftCampaign(key)
    const a = phone()
    const lines = [
      '{"phone": "+5511', // 1
      '[1,2]', // 2
      JSON.stringify({ phone: a, variables: { first_name: 'Ana' } }), // 3
      JSON.stringify({ phone: a, variables: { first_name: 'Ana', date: 'Tue', extra: 'x' } }), // 4
      JSON.stringify({ phone: a, userId: 'US.1', variables: {} }), // 5
      JSON.stringify({ phone: a, variables: { first_name: 'Ana', date: 'Tue' }, color: 'red' }), // 6
      JSON.stringify({ phone: a, variables: { first_name: 'A\u0000', date: 'Tue' } }), // 7: Postgres stores no NUL
    ]
    const res = await upload(id, lines.join('\n'), 'application/x-ndjson')
    expect(res.statusCode, res.body).toBe(200)
    const rows = await rowsOf(id)
    expect(rows.map((r) => [r.line, r.reason, r.detail])).toEqual([
      [1, 'malformed_line', 'the line is not JSON'],
      [2, 'malformed_line', 'the line is not a JSON object'],
      [3, 'invalid_variables', 'variables.date is missing'],
      [4, 'invalid_variables', 'variables.extra is not in the template'],
      [5, 'invalid_recipient', 'phone and userId are both given: give one'],
      [6, 'malformed_line', 'unknown property "color"'],
      [7, 'invalid_variables', 'variables.first_name holds a NUL character or an unpaired surrogate'],
    ])
  })

  it('refuses a header naming no variable of the template, or lacking one it needs (400), keeping nothing', async () => {
    const id = await draftCampaign(key)
    expectError(
      await upload(id, `phone,first_name,date,shoe_size\n${phone()},A,B,42\n`),
      400,
      'VALIDATION_ERROR',
      /"shoe_size" names no variable of the template/,
    )
    expectError(
      await upload(id, `phone,first_name\n${phone()},A\n`),
      400,
      'VALIDATION_ERROR',
      /\{\{date\}\}, which no column/,
    )
    expectError(
      await upload(id, `first_name,date\nA,B\n`),
      400,
      'VALIDATION_ERROR',
      /neither a "phone" nor a "userId"/,
    )
    expectError(await upload(id, ''), 400, 'VALIDATION_ERROR', /needs its header/)
    expect(await rowsOf(id)).toEqual([])
    const [campaign] = await world.sql`select status::text, audience from campaigns where id = ${id}`
    expect(campaign).toEqual({ status: 'draft', audience: null })
  })

  it('replaces the previous audience whole with a second upload', async () => {
    const id = await draftCampaign(key)
    await upload(id, `phone,first_name,date\n${phone()},A,B\n${phone()},C,D\n${phone()},E,F\n`)
    const second = phone()
    const res = await upload(
      id,
      JSON.stringify({ phone: second, variables: { first_name: 'Z', date: 'Y' } }),
      'application/x-ndjson',
    )
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience).toMatchObject({
      rows: 1,
      taken: 1,
      format: 'ndjson',
    })
    expect((await rowsOf(id)).map((r) => [r.line, r.phone])).toEqual([[1, second]])
  })

  it('replaces rows written before a campaign had a table of its own (the default partition)', async () => {
    const id = await draftCampaign(key)
    await world.sql`insert into campaign_recipients (campaign_id, line, phone, variables, state)
      values (${id}, 2, ${phone()}, '{}', 'pending'), (${id}, 9, ${phone()}, '{}', 'pending')`
    const taken = phone()
    const res = await upload(id, `phone,first_name,date\n${taken},A,B\n`)
    expect(res.statusCode, res.body).toBe(200)
    expect((await rowsOf(id)).map((r) => [r.line, r.phone, r.state])).toEqual([[2, taken, 'pending']])
    const [own] = await world.sql<{ partition: string }[]>`
      select tableoid::regclass::text as partition from campaign_recipients where campaign_id = ${id}`
    expect(own?.partition).toBe(`campaign_recipients_${id.replaceAll('-', '')}`)
  })

  it("answers 404 for another tenant's campaign, upload and report alike", async () => {
    const id = await draftCampaign(key)
    expectError(
      await upload(id, `phone,first_name,date\n${phone()},A,B\n`, 'text/csv', otherTenant),
      404,
      'NOT_FOUND',
    )
    const report = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${id}/skipped`,
      headers: { 'x-api-key': otherTenant.key },
    })
    expectError(report, 404, 'NOT_FOUND')
    expect(await rowsOf(id)).toEqual([])
  })

  it('needs manage:campaigns (403), a CSV or NDJSON body (415), a draft or ready campaign (409)', async () => {
    const id = await draftCampaign(key)
    const sendOnly = await tenantKey('acme', ['send:template'])
    expectError(await upload(id, 'phone\n', 'text/csv', sendOnly), 403, 'INSUFFICIENT_SCOPE')
    expectError(
      await upload(id, '{"phone":"+5511987654321"}', 'application/json'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    await world.sql`update campaigns set status = 'running' where id = ${id}`
    expectError(
      await upload(id, `phone,first_name,date\n${phone()},A,B\n`),
      409,
      'INVALID_STATE_TRANSITION',
      /running/,
    )
  })

  it("takes two campaigns' first uploads at once: one finishes while the other is still reading its body", async () => {
    const slow = await draftCampaign(key)
    const quick = await draftCampaign(key)
    if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path: `/api/third-party/campaigns/${slow}/audience`,
      headers: { 'x-api-key': key.key, 'content-type': 'text/csv' },
    })
    const answered = new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = ''
        res.on('data', (chunk) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode, body }))
      })
      req.on('error', reject)
    })
    req.write(`phone,first_name,date\n${phone()},A,B\n`)
    // Under way: its transaction holds the campaign's row and waits for the rest of the body.
    await waitFor(async () => {
      const [free] = await world.sql`select id from campaigns where id = ${slow} for update skip locked`
      return free ? undefined : true
    })
    const res = await upload(quick, `phone,first_name,date\n${phone()},C,D\n`)
    expect(res.statusCode, res.body).toBe(200)
    req.end(`${phone()},E,F\n`)
    const done = await answered
    expect(done.status, done.body).toBe(200)
    expect(await rowsOf(slow)).toHaveLength(2)
    expect(await rowsOf(quick)).toHaveLength(1)
  })

  it('leaves the previous audience as it was when the upload is cut off halfway', async () => {
    const id = await draftCampaign(key)
    const kept = phone()
    await upload(id, `phone,first_name,date\n${kept},A,B\n`)
    const before = await world.sql`select audience from campaigns where id = ${id}`
    if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path: `/api/third-party/campaigns/${id}/audience`,
      headers: { 'x-api-key': key.key, 'content-type': 'text/csv', 'content-length': '10000000' },
    })
    const closed = new Promise<void>((resolve) => {
      req.on('error', () => resolve())
      req.on('close', () => resolve())
    })
    let rows = 'phone,first_name,date\n'
    for (let i = 0; i < 5000; i++) rows += `+5511${String(900000000 + i)},Ana,Tuesday\n`
    req.write(rows)
    // Under way: its transaction holds the campaign's row, its rows are being copied in.
    await waitFor(async () => {
      const [free] = await world.sql`select id from campaigns where id = ${id} for update skip locked`
      return free ? undefined : true
    })
    req.destroy()
    await closed
    // The upload's transaction holds the campaign's row until it is rolled back.
    await waitFor(async () => {
      const [free] = await world.sql`select id from campaigns where id = ${id} for update skip locked`
      return free
    })
    expect((await rowsOf(id)).map((r) => r.phone)).toEqual([kept])
    expect(await world.sql`select audience from campaigns where id = ${id}`).toEqual(before)
  })
})

describe('/api/admin/campaigns/:id/audience and /skipped', () => {
  it("uploads to any key's campaign, judged with that key's tenant's entries, and audits it", async () => {
    const id = await draftCampaign(key)
    const [ok, tenants] = [phone(), phone()]
    await addSuppression(app.deps.db, {
      phoneNumberId: sender.phoneNumberId,
      senderId: sender.id,
      recipient: tenants,
      scope: 'all',
      source: 'api',
      reason: null,
      createdBy: `key:${key.id}`,
      apiKeyId: key.id,
      tenantId: 'acme',
    })
    const res = await app.inject({
      method: 'PUT',
      url: `/api/admin/campaigns/${id}/audience`,
      headers: { ...asAdmin(), 'content-type': 'text/csv' },
      payload: `phone,first_name,date\n${ok},A,B\n${tenants},C,D\n`,
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<CampaignAudienceUploaded>().audience).toMatchObject({
      taken: 1,
      skippedByReason: { suppressed: 1 },
    })
    const report = await app.inject({
      method: 'GET',
      url: `/api/admin/campaigns/${id}/skipped`,
      headers: asAdmin(),
    })
    expect(report.statusCode, report.body).toBe(200)
    expect(report.body).toContain('3,suppressed,')
    const audit =
      await world.sql`select actor, action from admin_audit_log where target_id = ${id} order by id`
    expect(audit).toEqual([
      { actor: 'ana', action: 'campaign.audience.upload' },
      { actor: 'ana', action: 'campaign.skipped.read' },
    ])
    const unknown = '00000000-0000-4000-8000-000000000000'
    expectError(
      await app.inject({
        method: 'PUT',
        url: `/api/admin/campaigns/${unknown}/audience`,
        headers: { ...asAdmin(), 'content-type': 'text/csv' },
        payload: 'phone\n',
      }),
      404,
      'NOT_FOUND',
    )
  })
})
