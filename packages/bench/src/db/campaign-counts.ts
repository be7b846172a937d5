/**
 * A campaign's counts at a million recipients (issue 43): what `GET /campaigns/:id`, the feeder's
 * completion check and `campaign.progress` read. In a database of its own: a running campaign of
 * BENCH_COUNTS_ROWS (1,000,000) rows, nine in ten fed, their messages in every status (as
 * message-list-generate.ts spreads them), a few hundred replies; the tally built as migration 0041
 * builds it. Then, BENCH_ROUNDS (5) times each, alternating:
 * - before: the counts read from every row and every message (`recountCampaign`, what
 *   `campaignCounts` was), and the old `hasPendingRows`;
 * - after: `campaignCounts` (the row counters and `campaign_tallies`), `hasPendingRows`;
 * each answer checked equal to the other's.
 * And the cost of the tally's triggers on the writes of the delivery path, in the same run:
 * BENCH_WRITES (20,000) campaign messages a round recorded `sent` by `recordDeliveryOutcomes` (100
 * a statement, as the worker does), then half of them `delivered` by `applyPlatformStatus`, with
 * the triggers and without (disabled on every partition), switched every 200 messages in
 * alternating order, BENCH_ROUNDS times, totals compared; and the same for messages of no campaign.
 * The moves the triggers appended are folded after each block with them (timed apart: the feeder's
 * work, not the writer's). And the engagement's triggers (migration 0051) on storing a reply and an
 * opt-out: BENCH_REPLIES (2,000) replies a round from recipients of the campaign, each stored as the
 * worker stores one (`recordInboundMessage`: routed by the messages to the phone, the window moved),
 * and as many opt-outs (`addSuppression`), with the triggers and without, switched every 100.
 *
 *   pnpm --filter @dispatch/bench bench:campaign-counts
 */
import { randomUUID } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import type { InboundContent } from '@dispatch/contracts'
import {
  addSuppression,
  applyPlatformStatus,
  type CampaignRow,
  campaignCounts,
  createDb,
  type DeliveryOutcome,
  findCampaign,
  foldCampaignTallies,
  hasPendingRows,
  recordDeliveryOutcomes,
  recordInboundMessage,
  recountCampaign,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { createBenchKey, STATUS } from '../api/message-list-generate.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const intEnv = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
const total = intEnv('BENCH_COUNTS_ROWS', 1_000_000)
const rounds = Math.max(1, intEnv('BENCH_ROUNDS', 5))
const writes = intEnv('BENCH_WRITES', 20_000)
const replies = intEnv('BENCH_REPLIES', 2_000)
const fedShare = 0.9
/** The campaign's sender's number: its messages' `sender_phone_number_id`, where replies come. */
const NUMBER = '106540352242922'

const world = await createBenchWorld('campaign_counts')
const { db, sql, close } = createDb(world.databaseUrl, { max: 4 })
const ms = (x: number) => `${x.toFixed(1)} ms`

try {
  const key = await createBenchKey(sql, 'counts')
  const startedAt = new Date(Date.now() - 3_600_000)
  const fed = Math.round(total * fedShare)
  const audience = {
    rows: total,
    taken: total - Math.floor(total / 100),
    skipped: Math.floor(total / 100),
    skippedByReason: { duplicate: Math.floor(total / 100) },
    format: 'csv',
    uploadedAt: startedAt.toISOString(),
  }
  const [campaign] = await sql<{ id: string }[]>`
    insert into campaigns (api_key_id, sender_id, name, template, status, audience, started_at, created_at)
    values (${key.id}, 'bench-sender', 'counts', ${JSON.stringify({ templateId: 'order_shipped', language: 'pt_BR' })}::jsonb,
      'running', ${JSON.stringify(audience)}::jsonb, ${startedAt.toISOString()}::timestamptz, ${startedAt.toISOString()}::timestamptz)
    returning id`
  const id = campaign?.id as string
  const loading = performance.now()
  // Rows: every hundredth skipped at upload; the first `fed` lines fed, each with its message id.
  for (let lo = 1; lo <= total; lo += 250_000) {
    const hi = Math.min(total, lo + 249_999)
    await sql`
      insert into campaign_recipients (campaign_id, line, phone, variables, state, reason, message_id)
      select ${id}, i, '+5511' || (10000000 + i)::text, '{"1":"Ana","2":"BR-1"}',
        (case when i % 100 = 0 then 'skipped' when i <= ${fed} then 'fed' else 'pending' end)::campaign_recipient_state,
        case when i % 100 = 0 then 'duplicate' end,
        case when i % 100 <> 0 and i <= ${fed} then md5(${id}::text || i)::uuid end
      from generate_series(${lo}::int, ${hi}::int) i`
  }
  const fedRows = fed - Math.floor(fed / 100)
  await sql`update campaigns set fed_through = ${fed}, confirmed_through = ${fed}, fed_rows = ${fedRows} where id = ${id}`
  // Their messages, as a restore writes them (triggers off), then the tally as migration 0041 builds it.
  for (let lo = 1; lo <= fed; lo += 250_000) {
    const hi = Math.min(fed, lo + 249_999)
    await sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`
      await tx.unsafe(
        `insert into messages (id, api_key_id, type, phone, payload, status, batch_id, accepted_at, updated_at,
           last_error_code, pricing_billable, pricing_category, sender_phone_number_id, sender_id, sent_at)
         select md5($1::text || i)::uuid, $2::uuid, 'template', '+5511' || (10000000 + i)::text, '{}'::jsonb, s, $6::uuid,
           $3::timestamptz + i * interval '1 millisecond', now(),
           case when s = 'failed' then (array['131026','131049','131047'])[1 + i % 3] end,
           case when s in ('delivered', 'read') then true end,
           case when s in ('delivered', 'read') then (case when i % 7 = 0 then 'utility' else 'marketing' end) end,
           '${NUMBER}', 'bench-sender', $3::timestamptz + i * interval '1 millisecond' + interval '1 second'
         from (select i, ${STATUS} as s from generate_series($4::int, $5::int) i where i % 100 <> 0) src`,
        [id, key.id, startedAt.toISOString(), lo, hi, id],
      )
    })
  }
  await sql`
    insert into campaign_tallies (campaign_id, status, error_code, billable, category, n)
    select m.batch_id, m.status,
      case when m.status in ('failed', 'expired') then coalesce(m.last_error_code, '') else '' end,
      coalesce(m.pricing_billable, false),
      case when m.pricing_billable then coalesce(m.pricing_category, 'unknown') else '' end,
      count(*)::int
    from messages m join campaigns c on c.id = m.batch_id and c.api_key_id = m.api_key_id
    where c.id = ${id} group by 1, 2, 3, 4, 5`
  // Replies from a few hundred of its recipients since it started.
  await sql`
    insert into inbound_messages (platform_message_id, phone_number_id, phone, type, content, api_key_id, received_at)
    select 'wamid.in.' || i, ${NUMBER}, '+5511' || (10000000 + i * 997)::text, 'text', '{"text":"ok"}'::jsonb,
      ${key.id}, now() - interval '10 minutes'
    from generate_series(1, 500) i`
  await sql`analyze`
  console.log(
    `campaign counts: ${total.toLocaleString()} rows (${fedRows.toLocaleString()} fed, their messages in every status),` +
      ` written in ${((performance.now() - loading) / 1000).toFixed(0)} s; ${rounds} rounds each`,
  )

  const row = (await findCampaign(db, id)) as CampaignRow
  const timed = async <T>(run: () => Promise<T>) => {
    const at = performance.now()
    const value = await run()
    return { value, ms: performance.now() - at }
  }
  const before: number[] = []
  const after: number[] = []
  const pendingBefore: number[] = []
  const pendingAfter: number[] = []
  for (let round = 0; round < rounds; round++) {
    const old = await timed(() => recountCampaign(db, row))
    const now = await timed(() => campaignCounts(db, row))
    if (!isDeepStrictEqual(old.value, now.value))
      throw new Error(`counts differ:\n${JSON.stringify(old.value)}\n${JSON.stringify(now.value)}`)
    before.push(old.ms)
    after.push(now.ms)
    // hasPendingRows as it was (no order: the planner's pick) and as it is.
    pendingBefore.push(
      (
        await timed(
          () => sql`select line from campaign_recipients where campaign_id = ${id} and line > ${fed}
            and state = 'pending' limit 1`,
        )
      ).ms,
    )
    pendingAfter.push((await timed(() => hasPendingRows(db, row))).ms)
  }
  const counted = await campaignCounts(db, row)
  console.log(
    `  counts: ${JSON.stringify(counted.counts)}; failedByCode ${JSON.stringify(counted.failedByCode)}`,
  )
  console.log(
    `  campaign counts: before (every row and message) ${ms(median(before))}, after (counters and tally)` +
      ` ${ms(median(after))}: ${(median(before) / median(after)).toFixed(0)}x faster (medians)`,
  )
  console.log(`  rows pending: before ${ms(median(pendingBefore))}, after ${ms(median(pendingAfter))}`)
  const [plan] = await sql<{ 'QUERY PLAN': string }[]>`
    explain select line from campaign_recipients where campaign_id = ${id} and line > ${fed}
      and state = 'pending' order by line limit 1`
  console.log(`  rows pending plan: ${plan?.['QUERY PLAN']}`)

  // The triggers' cost on the delivery path's writes.
  const partitions = await sql<{ name: string }[]>`
    select c.oid::regclass::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'messages'::regclass`
  const triggers = async (on: boolean) => {
    for (const name of ['messages', ...partitions.map((p) => p.name)])
      await sql.unsafe(`alter table ${name} ${on ? 'enable' : 'disable'} trigger campaign_tally_inserted`)
    // The row trigger is the parent's, cloned to each partition: switched on the parent, it recurses.
    for (const { name } of partitions)
      await sql.unsafe(`alter table ${name} ${on ? 'enable' : 'disable'} trigger campaign_tally_update`)
  }
  /** `size` outcomes recorded `sent` (100 a statement), then half of them `delivered` one by one. */
  const writeBlock = async (batchId: string | null, size: number) => {
    const at = new Date()
    const outcomes: DeliveryOutcome[] = Array.from({ length: size }, (_, i) => ({
      id: messageIdAt(at.getTime()),
      apiKeyId: key.id,
      type: 'template',
      phone: `+55219${String(i).padStart(8, '0')}`,
      userId: null,
      payload: { templateId: 'order_shipped', language: 'pt_BR' },
      clientReference: null,
      senderPhoneNumberId: NUMBER,
      senderId: 'bench-sender',
      batchId,
      acceptedAt: at,
      sendAt: null,
      expiresAt: null,
      status: 'sent',
      attempts: 1,
      platformMessageId: `wamid.bench.${randomUUID()}`,
      lastErrorCode: null,
      lastErrorMessage: null,
      at,
    }))
    const started = performance.now()
    for (let i = 0; i < outcomes.length; i += 100)
      await recordDeliveryOutcomes(sql, outcomes.slice(i, i + 100))
    const recorded = performance.now() - started
    const updating = performance.now()
    for (const o of outcomes.slice(0, size / 2))
      await applyPlatformStatus(db, {
        platformMessageId: o.platformMessageId as string,
        messageId: o.id,
        status: 'delivered',
        at: new Date(),
      })
    return { recorded, updated: performance.now() - updating }
  }
  // Paired: the triggers switched on and off every block of 200 (in alternating order), so a
  // machine's load drifting during the run weighs on both sides alike; totals compared.
  const kinds = { campaign: id, plain: null } as const
  const totals: Record<string, { recorded: number; updated: number }> = {}
  // The fold of the moves the "with" blocks appended (the feeder's work, not the writer's), timed apart.
  let folding = 0
  let folded = 0
  const block = 200
  for (let round = 0; round < rounds; round++) {
    for (let done = 0; done < writes; done += block) {
      const order = (done / block + round) % 2 === 0 ? [true, false] : [false, true]
      for (const on of order) {
        await triggers(on)
        for (const [kind, batchId] of Object.entries(kinds)) {
          const r = await writeBlock(batchId, block)
          const name = `${kind} ${on ? 'with' : 'without'}`
          totals[name] ??= { recorded: 0, updated: 0 }
          totals[name].recorded += r.recorded
          totals[name].updated += r.updated
        }
        if (on) {
          const at = performance.now()
          folded += await foldCampaignTallies(db)
          folding += performance.now() - at
        }
      }
    }
  }
  await triggers(true)
  console.log(
    `  the fold (apart from the writes): ${folded.toLocaleString()} moves in ${ms(folding)}` +
      ` (${((folding * 1000) / Math.max(1, folded)).toFixed(1)} µs a move)`,
  )
  // BENCH_WRITES=0 skips the writes (the engagement's part alone).
  for (const kind of writes > 0 ? Object.keys(kinds) : []) {
    const on = totals[`${kind} with`] as { recorded: number; updated: number }
    const off = totals[`${kind} without`] as { recorded: number; updated: number }
    console.log(
      `  ${kind} messages, ${(writes * rounds).toLocaleString()} recorded sent (100 a statement): with the tally` +
        ` ${ms(on.recorded)}, without ${ms(off.recorded)} (${(on.recorded / off.recorded).toFixed(3)}x);` +
        ` ${((writes * rounds) / 2).toLocaleString()} delivered one by one: with ${ms(on.updated)}, without` +
        ` ${ms(off.updated)} (${(on.updated / off.updated).toFixed(3)}x)`,
    )
  }

  // The engagement's triggers on storing a reply and an opt-out (migration 0051), paired the same way.
  const inboundPartitions = await sql<{ name: string }[]>`
    select c.oid::regclass::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'inbound_messages'::regclass`
  const engagementTriggers = async (on: boolean) => {
    const switched = on ? 'enable' : 'disable'
    for (const name of ['inbound_messages', ...inboundPartitions.map((p) => p.name)])
      await sql.unsafe(`alter table ${name} ${switched} trigger inbound_messages_campaign_replied`)
    await sql.unsafe(`alter table suppressions ${switched} trigger suppressions_campaign_opted_out`)
  }
  // Each reply and opt-out from a recipient of its own, fed and not yet engaged (lines 1..fed).
  let line = 0
  const nextRecipient = () => {
    do line += 7
    while (line % 100 === 0 || line % 997 === 0)
    if (line > fed) throw new Error('BENCH_REPLIES too many for the fed recipients')
    return `+5511${10_000_000 + line}`
  }
  const engagedBefore = (await campaignCounts(db, row)).engagement
  const stored = { 'reply with': 0, 'reply without': 0, 'opt-out with': 0, 'opt-out without': 0 }
  const routed = { with: 0, without: 0 }
  const engagedBlock = 100
  for (let round = 0; round < rounds; round++) {
    for (let done = 0; done < replies; done += engagedBlock) {
      const order = (done / engagedBlock + round) % 2 === 0 ? [true, false] : [false, true]
      for (const on of order) {
        await engagementTriggers(on)
        const side = on ? 'with' : 'without'
        const replying = performance.now()
        for (let i = 0; i < engagedBlock; i++) {
          const reply = await recordInboundMessage(db, {
            platformMessageId: `wamid.bench.${randomUUID()}`,
            phoneNumberId: NUMBER,
            phone: nextRecipient(),
            userId: null,
            username: null,
            type: 'text',
            content: { text: 'obrigado' } as InboundContent,
            contextId: null,
            receivedAt: new Date(),
          })
          if (reply.outcome === 'stored' && reply.apiKeyId === key.id) routed[side]++
        }
        stored[`reply ${side}`] += performance.now() - replying
        const opting = performance.now()
        for (let i = 0; i < engagedBlock; i++)
          await addSuppression(db, {
            phoneNumberId: NUMBER,
            senderId: 'bench-sender',
            recipient: nextRecipient(),
            scope: 'marketing',
            source: 'keyword',
            reason: null,
            createdBy: 'platform',
          })
        stored[`opt-out ${side}`] += performance.now() - opting
      }
    }
  }
  await engagementTriggers(true)
  const engaged = (await campaignCounts(db, row)).engagement
  const each = (replies * rounds).toLocaleString()
  if (routed.with !== replies * rounds || engaged.replied - engagedBefore.replied !== routed.with)
    throw new Error(`replies not counted: ${routed.with} routed, engagement ${JSON.stringify(engaged)}`)
  if (engaged.optedOut - engagedBefore.optedOut !== replies * rounds)
    throw new Error(`opt-outs not counted: engagement ${JSON.stringify(engaged)}`)
  console.log(
    `  engagement, ${each} replies stored (each routed, its window moved): with its trigger ${ms(stored['reply with'])},` +
      ` without ${ms(stored['reply without'])} (${(stored['reply with'] / stored['reply without']).toFixed(3)}x);` +
      ` ${each} opt-outs: with ${ms(stored['opt-out with'])}, without ${ms(stored['opt-out without'])}` +
      ` (${(stored['opt-out with'] / stored['opt-out without']).toFixed(3)}x); each counted once`,
  )
} finally {
  await close()
  await world.drop()
}
