import { describe, expect, it } from 'vitest'
import { readWalkthrough } from './docs.ts'
import { broken, parsePromise } from './promise.ts'

/** The walkthrough convention (README, "Walkthroughs in the docs") as the runner reads it. */

const page = (...blocks: string[]) =>
  blocks.map((block) => `Some prose.\n\n\`\`\`sh\n${block}\n\`\`\`\n`).join('\n')

describe('reading a walkthrough page', () => {
  it('cuts a block into commands as bash reads them, each with the promise under or beside it', () => {
    const walkthrough = readWalkthrough(
      'docs/x.md',
      page(`API=http://127.0.0.1:3000
# 1. A step's comment is prose.
curl -s -X POST $API/a -H 'content-type: application/json' \\
  -d '{"a":1,
  "b":2}'
# → 201 {"id":"…",
#    "status":"pending",…}
curl -s $API/b    # → 403 API_KEY_NOT_ACTIVE (pending)
for i in 1 2; do
  echo $i
done`),
    )
    expect(walkthrough.steps.map((s) => [s.line, s.command.split('\n').length])).toEqual([
      [4, 1],
      [6, 3],
      [11, 1],
      [12, 3],
    ])
    expect(walkthrough.steps[1]?.promised).toMatchObject({
      status: 201,
      text: '201 {"id":"…", "status":"pending",…}',
    })
    expect(walkthrough.steps[2]?.promised).toMatchObject({ status: 403, contains: 'API_KEY_NOT_ACTIVE' })
  })

  it("takes a promise in a step's comment above a command as that command's", () => {
    const { steps } = readWalkthrough(
      'docs/x.md',
      page(`curl -s $API/a   # → 200

# 3. Start it (now). → 200 {"status": "running",
#    "counts": {}}
curl -s -X POST $API/start
curl -s $API/b`),
    )
    expect(steps.map((s) => s.promised?.text)).toEqual([
      '200',
      '200 {"status": "running", "counts": {}}',
      undefined,
    ])
  })

  it('reads placeholder lines: the field they take, or the key the page needs', () => {
    const { steps } = readWalkthrough(
      'docs/x.md',
      page(`KEY=mdk_dev_…   # a key with send:free-text and read:messages
curl -s $API/x
MSG=…   # the messageId from the answer
ID=…; OTHER=mdk_dev_…   # from the answer
API=http://x; SECRET='a=b'`),
    )
    expect(steps[0]?.assignments?.[0]?.placeholder).toEqual({
      name: 'KEY',
      written: 'mdk_dev_…',
      keyWithScopes: ['send:free-text', 'read:messages'],
    })
    expect(steps[2]?.assignments?.[0]?.placeholder?.field).toBe('messageId')
    expect(steps[3]?.assignments?.map((a) => a.placeholder?.name)).toEqual(['ID', 'OTHER'])
    expect(steps[4]?.assignments).toBeUndefined() // no placeholder: runs as written
  })

  it('leaves out a block marked "not a walkthrough", and names the line of a broken convention', () => {
    const skipped = readWalkthrough(
      'docs/x.md',
      '<!-- not a walkthrough: starts the service -->\n```sh\nbash scripts/start.sh\n```\n',
    )
    expect(skipped.steps).toEqual([])
    expect(() => readWalkthrough('docs/x.md', page('curl -s $API/orders/<id from the answer>'))).toThrow(
      /docs\/x\.md:4: .*placeholder line/,
    )
    expect(() => readWalkthrough('docs/x.md', page('# → 200'))).toThrow(
      /docs\/x\.md:4: a promise \(→\) with no command under it/,
    )
    expect(() => readWalkthrough('docs/x.md', page("curl -d '{"))).toThrow(/never ends/)
  })
})

describe('a promise and an answer', () => {
  it('matches a JSON fragment: … for any value, the rest of a string, more members or elements', () => {
    const promised = parsePromise('200 {"messageId":"…","status":"sent","platformMessageId":"wamid.…",…}')
    const answer = { messageId: 'm1', status: 'sent', platformMessageId: 'wamid.abc', attempts: 1 }
    expect(broken(promised, { status: 200, output: JSON.stringify(answer) })).toBeUndefined()
    expect(broken(promised, { status: 200, output: JSON.stringify({ ...answer, status: 'queued' }) })).toBe(
      '.status: promised "sent", got "queued"',
    )
    expect(broken(promised, { status: 202, output: JSON.stringify(answer) })).toBe(
      'status: promised 200, got 202',
    )
  })

  it('finds array elements in order, others between', () => {
    const promised = parsePromise('{…,"data":[{"type":"b"},{"type":"d"}]}')
    const data = ['a', 'b', 'c', 'd'].map((type) => ({ type }))
    expect(broken(promised, { output: JSON.stringify({ data }) })).toBeUndefined()
    expect(broken(promised, { output: JSON.stringify({ data: data.reverse() }) })).toMatch(
      /\.data\[\d\]\.type/,
    )
  })

  it('looks for text in the output, a remark in parentheses left out', () => {
    expect(
      broken(parsePromise('receipt.jpg: JPEG image data …'), {
        output: 'receipt.jpg: JPEG image data, JFIF',
      }),
    ).toBeUndefined()
    expect(
      broken(parsePromise('403 API_KEY_NOT_ACTIVE (revoked)'), {
        status: 403,
        output: '{"errorCode":"API_KEY_NOT_ACTIVE"}',
      }),
    ).toBeUndefined()
    expect(broken(parsePromise('200 approved'), { status: 200, output: '{"status":"pending"}' })).toBe(
      'promised output holding "approved"',
    )
  })
})
