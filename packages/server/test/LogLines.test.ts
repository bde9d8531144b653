/**
 * Production log lines (config/Logging): the shortcut for flat lines must write exactly what effect's
 * `Logger.formatJson` writes, and anything it cannot write plainly (a secret, an object, a number JSON cannot hold)
 * must still go through effect's formatter, redaction included.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Formatter, Logger, Redacted } from "effect"
import * as FastCheck from "fast-check"
import { formatLine, jsonLogger, type Structured } from "../src/config/Logging.ts"

const plain = FastCheck.oneof(
  FastCheck.string({ unit: "binary" }),
  FastCheck.double({ noNaN: true, noDefaultInfinity: true }),
  FastCheck.integer(),
  FastCheck.boolean(),
  FastCheck.constant(null)
)

const anyValue = FastCheck.oneof(
  plain,
  FastCheck.constant(Number.NaN),
  FastCheck.constant(Number.POSITIVE_INFINITY),
  FastCheck.constant(undefined),
  FastCheck.constant(Redacted.make("sk_live_secret")),
  FastCheck.bigInt(),
  FastCheck.string().map((message) => new Error(message)),
  FastCheck.constant(undefined).map(() => {
    const cyclic: Record<string, unknown> = { name: "cyclic" }
    cyclic.self = cyclic
    return cyclic
  }),
  FastCheck.dictionary(FastCheck.string(), plain),
  FastCheck.array(plain)
)

const structured = (value: FastCheck.Arbitrary<unknown>) =>
  FastCheck.record({
    level: FastCheck.constantFrom("INFO", "WARN", "ERROR"),
    fiberId: FastCheck.string(),
    timestamp: FastCheck.date({ noInvalidDate: true }).map((date) => date.toISOString()),
    message: FastCheck.oneof(FastCheck.string({ unit: "binary" }), value),
    cause: FastCheck.option(FastCheck.string(), { nil: undefined }),
    // Keys as a log call may give them, `__proto__` included.
    annotations: FastCheck.dictionary(
      FastCheck.oneof(FastCheck.string(), FastCheck.constantFrom("__proto__", "constructor", "http.status")),
      value
    ),
    spans: FastCheck.dictionary(FastCheck.string(), FastCheck.nat())
  }) as FastCheck.Arbitrary<Structured>

describe("production log lines", () => {
  it("write exactly what effect's formatJson writes", () => {
    FastCheck.assert(
      FastCheck.property(structured(plain), (line) => formatLine(line) === Formatter.formatJson(line)),
      { numRuns: 500 }
    )
  })

  it("fall back to effect's formatter for what is not plain", () => {
    FastCheck.assert(
      FastCheck.property(structured(anyValue), (line) => formatLine(line) === Formatter.formatJson(line)),
      { numRuns: 500 }
    )
  })

  it.effect("never print a Redacted annotation's value", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const capture = Logger.map(jsonLogger, (line) => {
        lines.push(line)
      })
      yield* Effect.logInfo("Linked").pipe(
        Effect.annotateLogs({ key: Redacted.make("sk_live_secret"), request_id: "req_1" }),
        Effect.provide(Logger.layer([capture]))
      )
      assert.strictEqual(lines.length, 1)
      const parsed = JSON.parse(lines[0] ?? "")
      assert.strictEqual(parsed.message, "Linked")
      assert.strictEqual(parsed.annotations.request_id, "req_1")
      assert.notInclude(lines[0], "sk_live_secret")
    })
  )
})
