/**
 * Canonical JSON in the style of RFC 8785 (JCS): object keys sorted by UTF-16 code units, no white space, numbers
 * and strings written exactly as `JSON.stringify` writes them. Two JSON texts that differ only in key order or white
 * space have the same canonical form, which is what "same body" means for idempotency (decisions §4).
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"

/**
 * A value that has no JSON form (undefined, a function, a symbol, a bigint, NaN, ±Infinity, a cycle, a class
 * instance), or one nested deeper than {@link maxDepth}.
 */
export class NonJsonValue extends Schema.TaggedError<NonJsonValue>()("NonJsonValue", {
  /** JSON-pointer-like location of the offending value, `""` for the root. */
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The deepest nesting of arrays and objects accepted. The writer recurses, and a 1 MiB body could otherwise nest
 * deep enough to overflow the stack; no Kassa body comes near this.
 */
export const maxDepth = 512

/**
 * The canonical JSON text of a parsed JSON value (`Schema.Json`, or the `unknown` that `JSON.parse` returns), or
 * `NonJsonValue` when some part of it has no JSON form. Never throws.
 */
export const canonicalize = (value: unknown): Result.Result<string, NonJsonValue> => {
  const out: Array<string> = []
  const failure = write(value, "", new Set(), out)
  return failure === undefined ? Result.succeed(out.join("")) : Result.fail(failure)
}

// UTF-16 code unit order, as JCS requires; `<` on strings compares code units, unlike `localeCompare`.
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

const fail = (path: string, message: string) => new NonJsonValue({ path, message: `${path || "(root)"}: ${message}` })

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

// Writes into `out` and returns the first failure; a single buffer keeps deep values linear in their size.
const write = (value: unknown, path: string, ancestors: Set<object>, out: Array<string>): NonJsonValue | undefined => {
  switch (typeof value) {
    case "string":
      out.push(JSON.stringify(value))
      return undefined
    case "boolean":
      out.push(value ? "true" : "false")
      return undefined
    case "number":
      if (!Number.isFinite(value)) return fail(path, `${value} is not a JSON number`)
      // JSON.stringify prints the shortest round-tripping form (ECMAScript Number::toString), as JCS requires; -0 → "0".
      out.push(JSON.stringify(value))
      return undefined
    case "undefined":
      return fail(path, "undefined is not a JSON value")
    case "bigint":
      return fail(path, "a bigint is not a JSON value")
    case "function":
      return fail(path, "a function is not a JSON value")
    case "symbol":
      return fail(path, "a symbol is not a JSON value")
    case "object":
      break
  }
  if (value === null) {
    out.push("null")
    return undefined
  }
  if (ancestors.has(value)) return fail(path, "a circular reference is not a JSON value")
  // `ancestors` holds the containers above this one, so its size is the depth.
  if (ancestors.size >= maxDepth) return fail(path, `nested deeper than ${maxDepth} levels`)
  ancestors.add(value)
  const failure = Array.isArray(value)
    ? writeArray(value, path, ancestors, out)
    : writeObject(value, path, ancestors, out)
  ancestors.delete(value)
  return failure
}

const writeArray = (
  value: ReadonlyArray<unknown>,
  path: string,
  ancestors: Set<object>,
  out: Array<string>
): NonJsonValue | undefined => {
  out.push("[")
  // An index loop (not forEach) so holes show up as undefined and are refused.
  for (let i = 0; i < value.length; i++) {
    if (i > 0) out.push(",")
    const failure = write(value[i], `${path}/${i}`, ancestors, out)
    if (failure !== undefined) return failure
  }
  out.push("]")
  return undefined
}

const writeObject = (
  value: object,
  path: string,
  ancestors: Set<object>,
  out: Array<string>
): NonJsonValue | undefined => {
  // Dates, Maps, class instances… never come out of JSON.parse; refusing them beats guessing a representation.
  if (!isPlainObject(value)) return fail(path, "only plain objects are JSON objects")
  if (Object.getOwnPropertySymbols(value).length > 0) return fail(path, "symbol keys are not JSON")
  const record = value as Readonly<Record<string, unknown>>
  const keys = Object.keys(record).sort(byCodeUnits)
  out.push("{")
  for (const [i, key] of keys.entries()) {
    if (i > 0) out.push(",")
    out.push(JSON.stringify(key), ":")
    const failure = write(record[key], `${path}/${escapePointer(key)}`, ancestors, out)
    if (failure !== undefined) return failure
  }
  out.push("}")
  return undefined
}

// RFC 6901 escaping, so the reported path is unambiguous.
const escapePointer = (key: string): string => key.replaceAll("~", "~0").replaceAll("/", "~1")
