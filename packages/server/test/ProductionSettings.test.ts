/**
 * Settings that parse but cannot be right stop the start with a message naming them (issue 11 §12): short secrets in
 * production, a base URL that is no absolute web address, a timeout of zero.
 */
import { ConfigProvider, Duration, Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"

const long = "x".repeat(32)

/** Loads the settings from `env` as a start would; the failure's text, or the settings. */
const load = (env: Record<string, string>) =>
  Effect.runPromiseExit(
    Effect.scoped(Layer.build(ServerConfig.layer)).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
    )
  ).then((exit) => (Exit.isFailure(exit) ? { failure: String(exit.cause) } : { failure: undefined }))

const production = {
  KASSA_ENV: "production",
  KASSA_ADMIN_TOKEN: long,
  KASSA_SECRET_KEY: long,
  DATABASE_URL: "postgres://kassa@db.internal/kassa"
}

describe("settings refused at start", () => {
  it("production accepts 32-character secrets and an https base URL", async () => {
    expect(await load({ ...production, KASSA_BASE_URL: "https://pay.example.com" })).toEqual({ failure: undefined })
  })

  it.each(["KASSA_ADMIN_TOKEN", "KASSA_SECRET_KEY", "KASSA_SECRET_KEY_PREVIOUS"])(
    "production refuses a %s under 32 characters",
    async (name) => {
      const { failure } = await load({ ...production, [name]: "x".repeat(31) })
      expect(failure).toContain(name)
      expect(failure).toContain("at least 32 characters")
      // The message never repeats the secret.
      expect(failure).not.toContain("x".repeat(31))
    }
  )

  it("short secrets stay allowed outside production (tests, local runs)", async () => {
    expect(await load({ KASSA_ADMIN_TOKEN: "short", KASSA_SECRET_KEY: "short" })).toEqual({ failure: undefined })
  })

  it.each(["javascript:alert(1)", "file:///etc/passwd", "data:text/html,hi", "ftp://files.example.com"])(
    "KASSA_BASE_URL %s is refused, in production and outside it",
    async (url) => {
      for (const env of [{ ...production, KASSA_BASE_URL: url }, { KASSA_BASE_URL: url }]) {
        const { failure } = await load(env)
        expect(failure).toContain("KASSA_BASE_URL")
        expect(failure).toContain("http:// or https://")
      }
    }
  )

  it("a relative KASSA_BASE_URL is refused, naming the setting", async () => {
    const { failure } = await load({ KASSA_BASE_URL: "/pay" })
    expect(failure).toContain("KASSA_BASE_URL")
  })

  it.each([
    "KASSA_REQUEST_DEADLINE",
    "KASSA_REQUEST_RECEIVE_TIMEOUT",
    "KASSA_KEEP_ALIVE_TIMEOUT",
    "KASSA_SEND_TIMEOUT",
    "KASSA_DATABASE_STATEMENT_TIMEOUT"
  ])("%s must be a positive duration", async (name) => {
    expect((await load({ [name]: "0 seconds" })).failure).toContain(name)
    expect((await load({ [name]: "soon" })).failure).toContain(name)
  })

  it("the timeouts have their documented defaults and read human durations", async () => {
    const settings = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* ServerConfig
      }).pipe(
        Effect.provide(ServerConfig.layer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ KASSA_REQUEST_DEADLINE: "3 seconds" })))
      )
    )
    expect(Duration.toMillis(settings.requestDeadline)).toBe(3000)
    expect(Duration.toMillis(settings.requestReceiveTimeout)).toBe(30_000)
    expect(Duration.toMillis(settings.keepAliveTimeout)).toBe(65_000)
    expect(Duration.toMillis(settings.databaseStatementTimeout)).toBe(30_000)
  })
})

describe("the embedded database in production (issue 14 §2)", () => {
  const { DATABASE_URL: _, ...embedded } = production

  it("is refused, naming KASSA_ALLOW_EMBEDDED and DATABASE_URL", async () => {
    const { failure } = await load(embedded)
    expect(failure).toContain("KASSA_ALLOW_EMBEDDED=1")
    expect(failure).toContain("DATABASE_URL")
  })

  it("is allowed with KASSA_ALLOW_EMBEDDED=1, and outside production", async () => {
    expect(await load({ ...embedded, KASSA_ALLOW_EMBEDDED: "1" })).toEqual({ failure: undefined })
    expect(await load({})).toEqual({ failure: undefined })
  })
})

describe("pool size and delivery concurrency (issue 14 §2)", () => {
  const read = (env: Record<string, string>) =>
    Effect.runPromise(
      Effect.gen(function* () {
        return yield* ServerConfig
      }).pipe(
        Effect.provide(ServerConfig.layer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
      )
    )

  it("default to 20 connections, 256 attempts in flight and 16 per URL, and read the settings", async () => {
    const defaults = await read({})
    expect([defaults.databasePoolSize, defaults.deliveryConcurrency, defaults.deliveryConcurrencyPerUrl]).toEqual([
      20, 256, 16
    ])
    expect(defaults.migrate).toBe(true)
    const set = await read({
      KASSA_DATABASE_POOL_SIZE: "5",
      KASSA_DELIVERY_CONCURRENCY: "64",
      KASSA_DELIVERY_CONCURRENCY_PER_URL: "4",
      KASSA_MIGRATE: "false"
    })
    expect([set.databasePoolSize, set.deliveryConcurrency, set.deliveryConcurrencyPerUrl, set.migrate]).toEqual([
      5,
      64,
      4,
      false
    ])
  })

  it.each(["KASSA_DATABASE_POOL_SIZE", "KASSA_DELIVERY_CONCURRENCY", "KASSA_DELIVERY_CONCURRENCY_PER_URL"])(
    "a bad %s stops the start naming it",
    async (name) => {
      for (const value of ["0", "-3", "many", "2.5", "100000"]) {
        expect((await load({ [name]: value })).failure, `${name}=${value}`).toContain(name)
      }
    }
  )

  it("a pool of fewer than 4 connections is refused: the delivery engine holds 2 of them", async () => {
    expect((await load({ KASSA_DATABASE_POOL_SIZE: "3" })).failure).toContain("KASSA_DATABASE_POOL_SIZE")
    expect(await load({ KASSA_DATABASE_POOL_SIZE: "4" })).toEqual({ failure: undefined })
  })

  it("a per-URL cap above the process cap is refused", async () => {
    const { failure } = await load({ KASSA_DELIVERY_CONCURRENCY: "8", KASSA_DELIVERY_CONCURRENCY_PER_URL: "16" })
    expect(failure).toContain("KASSA_DELIVERY_CONCURRENCY_PER_URL")
  })

  it("KASSA_MIGRATE must be a boolean", async () => {
    expect((await load({ KASSA_MIGRATE: "perhaps" })).failure).toContain("KASSA_MIGRATE")
  })
})
