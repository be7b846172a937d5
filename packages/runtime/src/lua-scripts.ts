import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import type { Cluster, Redis } from 'ioredis'

/**
 * Lua scripts kept as `.lua` files, as BullMQ keeps its own (src/commands/addStandardJob-8.lua):
 * one script a file in a `lua/` folder beside the module that runs it, named `<name>-<keys>.lua`
 * with the number of KEYS it takes (a name without `-<keys>`: any number, the caller passes it
 * first), and parts shared between scripts in `includes/`, pulled in by a line
 * `--- @include "<path>"` (relative to the including file, `.lua` implied). Each include is
 * inlined once per script, where first named; one that is missing fails with the file and line.
 */

/** A script as read from its file, includes inlined. */
export interface LuaScript {
  /** The file's name without its key count: the name of its command on a client. */
  readonly name: string
  /** The KEYS it takes, from its file name; undefined: any number, passed first at each call. */
  readonly numberOfKeys: number | undefined
  readonly lua: string
  readonly file: string
}

/** A script called on one client: its keys, then its arguments (the number of keys first when the script takes any). */
export type LuaCall = (...keysAndArgs: Array<string | number>) => Promise<unknown>

export class LuaScriptError extends Error {
  override name = 'LuaScriptError'
}

const SCRIPT_FILE = /^([A-Za-z][A-Za-z0-9]*)(?:-(\d+))?\.lua$/
const INCLUDE = /^-{2,3}[ \t]*@include[ \t]+(["'])(.+?)\1[; \t]*$/
/** Whole-line comments (not `--[[` blocks): the text sent by EVAL stays as short as the script. */
const COMMENT_LINE = /^[ \t]*--(?!\[\[).*$/

/** `file`'s text with its includes inlined, each file of `seen` (this script's) at most once. */
function resolveIncludes(file: string, seen: Set<string>, stack: string[]): string {
  const lines = readFileSync(file, 'utf8').split('\n')
  const out: string[] = []
  for (const [index, line] of lines.entries()) {
    const include = INCLUDE.exec(line)
    if (include) {
      const name = include[2] as string
      const target = resolve(dirname(file), name.endsWith('.lua') ? name : `${name}.lua`)
      if (!existsSync(target)) {
        const from = [...stack, `${file}:${index + 1}`].join(' <- ')
        throw new LuaScriptError(`@include "${name}" not found (${target}), included from ${from}`)
      }
      if (!seen.has(target)) {
        seen.add(target)
        out.push(resolveIncludes(target, seen, [...stack, `${file}:${index + 1}`]))
      }
    } else if (!COMMENT_LINE.test(line) && line.trim() !== '') {
      out.push(line)
    }
  }
  return out.join('\n')
}

/** Reads and resolves one script file. */
export function readLuaScript(file: string): LuaScript {
  const match = SCRIPT_FILE.exec(file.split(/[\\/]/).pop() as string)
  if (!match) throw new LuaScriptError(`${file}: a script file is named <name>-<keys>.lua`)
  const path = resolve(file)
  return {
    name: match[1] as string,
    numberOfKeys: match[2] === undefined ? undefined : Number(match[2]),
    lua: resolveIncludes(path, new Set([path]), []),
    file: path,
  }
}

const folders = new Map<string, ReadonlyMap<string, LuaScript>>()

/** Every script of `dir` (its `.lua` files, not its includes), read and resolved once per process. */
export function readLuaScripts(dir: string): ReadonlyMap<string, LuaScript> {
  const path = resolve(dir)
  let scripts = folders.get(path)
  if (!scripts) {
    if (!existsSync(path)) throw new LuaScriptError(`no folder of Lua scripts at ${path}`)
    const read = new Map<string, LuaScript>()
    const files = readdirSync(path).filter((name) => name.endsWith('.lua'))
    for (const entry of files.sort()) {
      const script = readLuaScript(join(path, entry))
      if (read.has(script.name)) throw new LuaScriptError(`${path}: two scripts named ${script.name}`)
      read.set(script.name, script)
    }
    scripts = read
    folders.set(path, scripts)
  }
  return scripts
}

/** The scripts `names` of `dir`, by name; throws when one has no file there. */
export function luaScripts<const Name extends string>(
  dir: string,
  names: readonly Name[],
): Record<Name, LuaScript> {
  const scripts = readLuaScripts(dir)
  const picked = {} as Record<Name, LuaScript>
  for (const name of names) {
    const script = scripts.get(name)
    if (!script)
      throw new LuaScriptError(`no script ${name}-<keys>.lua in ${relative(process.cwd(), dir) || dir}`)
    picked[name] = script
  }
  return picked
}

type Client = Redis | Cluster

/**
 * Defines `script` as a command of `redis` named after it (and of every pipeline made from it
 * afterwards): ioredis sends EVALSHA, and EVAL once on NOSCRIPT; a pipeline loads it first when the
 * connection has not. Idempotent; refuses a name the client already has for something else.
 * Answers the command bound to `redis`.
 */
export function defineLuaCommand(redis: Client, script: LuaScript): LuaCall {
  const known = (redis as unknown as { scriptsSet: Record<string, { lua: string } | undefined> }).scriptsSet[
    script.name
  ]
  if (known === undefined) {
    if (script.name in redis)
      throw new LuaScriptError(`the client already has a ${script.name}: rename ${script.file}`)
    redis.defineCommand(script.name, {
      lua: script.lua,
      ...(script.numberOfKeys === undefined ? {} : { numberOfKeys: script.numberOfKeys }),
    })
    onWaitingAutoPipelines(redis, script.name)
  } else if (known.lua !== script.lua) {
    throw new LuaScriptError(
      `the client already defines another script named ${script.name} (${script.file})`,
    )
  }
  return luaCommandOf(redis, script) as LuaCall
}

/**
 * Puts the command `name`, just defined on `redis`, on its auto-pipelines that wait to be sent.
 * ioredis copies a client's commands into a pipeline when it makes it, so a command defined after
 * this tick's auto-pipeline was opened is missing there: its call then throws
 * (`pipeline[functionName] is not a function`) and, when that pipeline answers one reply short,
 * ioredis throws outside any promise (`results[i] is not iterable`) and the process dies.
 */
function onWaitingAutoPipelines(redis: Client, name: string) {
  const waiting = (redis as unknown as { _autoPipelines?: Map<string, Record<string, unknown>> })
    ._autoPipelines
  if (!waiting) return
  const commands = redis as unknown as Record<string, unknown>
  for (const pipeline of waiting.values()) {
    pipeline[name] = commands[name]
    pipeline[`${name}Buffer`] = commands[`${name}Buffer`]
  }
}

/**
 * The command `script` on a pipeline (or client) made from a client it was defined on
 * (`defineLuaCommand`): on a pipeline, queued there by its SHA.
 */
export function luaCommandOf(
  target: object,
  script: LuaScript,
): (...keysAndArgs: Array<string | number>) => unknown {
  const command = (target as Record<string, unknown>)[script.name]
  if (typeof command !== 'function') throw new LuaScriptError(`${script.name} is not defined on this client`)
  return command.bind(target)
}

/** What can run a script by its text (a client, a pipeline, or a stand-in). */
export interface LuaEvaluator {
  eval(lua: string, numberOfKeys: number | string, ...keysAndArgs: Array<string | number>): Promise<unknown>
}

/** EVAL: the script's text on every call, for scripts run too rarely to keep by SHA. */
export function evalLuaScript(
  redis: LuaEvaluator,
  script: LuaScript,
  ...keysAndArgs: Array<string | number>
) {
  if (script.numberOfKeys !== undefined) return redis.eval(script.lua, script.numberOfKeys, ...keysAndArgs)
  const [numberOfKeys, ...rest] = keysAndArgs
  return redis.eval(script.lua, numberOfKeys as number, ...rest)
}

/**
 * `script` as a call: off a Cluster its command (EVALSHA, `defineLuaCommand`), rather than its
 * text on every call; on a Cluster EVAL, as a defined command in an auto-pipeline that spans slots
 * fails there (ioredis checks every key of a pipeline that may load a script).
 */
export function scriptCall(redis: Client, script: LuaScript): LuaCall {
  if (redis.isCluster) return (...keysAndArgs) => evalLuaScript(redis as LuaEvaluator, script, ...keysAndArgs)
  return defineLuaCommand(redis, script)
}
