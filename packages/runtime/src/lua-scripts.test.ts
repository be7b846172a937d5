import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { LuaScriptError, luaScripts, readLuaScript, readLuaScripts } from './lua-scripts.ts'

const root = mkdtempSync(join(tmpdir(), 'lua-scripts-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A folder of scripts written from `files` (path → text). */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(root, 'case-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

it('names a script after its file and takes its number of keys from it (none: any number)', () => {
  const dir = folder({
    'takeOne-2.lua': "-- what it does\nreturn redis.call('GET', KEYS[2])\n",
    'countAll.lua': 'return #KEYS\n',
  })
  const scripts = readLuaScripts(dir)
  expect(scripts.get('takeOne')).toMatchObject({ name: 'takeOne', numberOfKeys: 2 })
  expect(scripts.get('countAll')).toMatchObject({ name: 'countAll', numberOfKeys: undefined })
  // Whole-line comments are not sent to Redis; the code is, as written.
  expect(scripts.get('takeOne')?.lua).toBe("return redis.call('GET', KEYS[2])")
})

it('inlines each include once, where first named, includes of includes too', () => {
  const dir = folder({
    'both-1.lua': [
      '--- @include "includes/first"',
      "--- @include 'includes/second.lua'",
      '--- @include "includes/first"',
      'return first() + second()',
    ].join('\n'),
    'includes/first.lua': 'local function first() return 1 end',
    'includes/second.lua': '--- @include "first"\nlocal function second() return first() + 1 end',
  })
  expect(readLuaScript(join(dir, 'both-1.lua')).lua).toBe(
    [
      'local function first() return 1 end',
      'local function second() return first() + 1 end',
      'return first() + second()',
    ].join('\n'),
  )
})

it('fails on a missing include with the file and line that named it', () => {
  const dir = folder({ 'broken-1.lua': 'local a = 1\n--- @include "includes/nowhere"\n' })
  expect(() => readLuaScript(join(dir, 'broken-1.lua'))).toThrow(LuaScriptError)
  expect(() => readLuaScript(join(dir, 'broken-1.lua'))).toThrow(
    /@include "includes\/nowhere" not found .*broken-1\.lua:2/,
  )
})

it('refuses a file not named <name>-<keys>.lua, and a script asked for that has no file', () => {
  const dir = folder({ 'take-one-1.lua': 'return 1' })
  expect(() => readLuaScripts(dir)).toThrow(/named <name>-<keys>\.lua/)
  const other = folder({ 'takeOne-1.lua': 'return 1' })
  expect(luaScripts(other, ['takeOne']).takeOne.numberOfKeys).toBe(1)
  expect(() => luaScripts(other, ['takeTwo'] as string[])).toThrow(/no script takeTwo-<keys>\.lua/)
  // A module moved without its lua/ folder says so at its import.
  expect(() => readLuaScripts(join(other, 'lua'))).toThrow(/no folder of Lua scripts at .*lua$/)
})
