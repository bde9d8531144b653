/**
 * The Mollie connector on the wire, against the stateful fake over real HTTP: "no answer" for 5xx, 429, hangs (one
 * bound per operation, not per call) and a Mollie that is not there; other 4xx as refusals; the SDK imported on first
 * use only; its calls over Kassa's node:http client, not the global fetch; and `KASSA_MOLLIE_API_URL`. The operations
 * and their mappings are in MollieConnectorOperations.test.ts.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Cause, ConfigProvider, Duration, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import * as MollieConnector from "../src/providers/MollieConnector.ts"
import { startFakeMollie } from "./support/FakeMollie.ts"
import {
  connector,
  failureOf,
  fake,
  layerWith,
  linkFor,
  opened,
  openRequest,
  readOf,
  replaceFake,
  run,
  useMollieConnector
} from "./support/MollieConnectorSupport.ts"

useMollieConnector()

describe("no answer and refusals", () => {
  it("5xx and 429 are no answer, after exactly one call (the SDK's retries are off)", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link)
    for (const [status, reason] of [
      [500, "unavailable"],
      [503, "unavailable"],
      [429, "rate_limited"]
    ] as const) {
      const before = fake.calls("payments.get")
      fake.inject({ method: "GET", path: `/v2/payments/${checkoutId}` }, { kind: "status", status })
      expect(await readOf(link, checkoutId), String(status)).toEqual({ _tag: "NoAnswer", reason })
      expect(fake.calls("payments.get")).toBe(before + 1)
    }
  })

  it("other 4xx are refusals; a key Mollie no longer accepts names secret_key", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link)
    fake.inject({ method: "GET", path: `/v2/payments/${checkoutId}` }, { kind: "status", status: 400 })
    expect(await failureOf(Effect.flatMap(connector, (c) => c.read(link, checkoutId)))).toMatchObject({
      _tag: "ProviderRefused",
      status: 400,
      field: null
    })
    expect(
      await failureOf(Effect.flatMap(connector, (c) => c.read(linkFor("test_revoked"), checkoutId)))
    ).toMatchObject({
      status: 401,
      field: "secret_key"
    })
  })

  it("a hang is no answer within the (shortened) bound; a production start refuses a shortened bound", async () => {
    expect(Duration.toMillis(Effect.runSync(Effect.service(MollieConnector.CallTimeout)))).toBe(10_000)
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link)
    fake.inject({ method: "GET", path: `/v2/payments/${checkoutId}` }, { kind: "hang" })
    const started = Date.now()
    expect(
      await run(
        Effect.flatMap(connector, (c) => c.read(link, checkoutId)),
        Duration.millis(300)
      )
    ).toEqual({
      _tag: "NoAnswer",
      reason: "timeout"
    })
    expect(Date.now() - started).toBeLessThan(2_000)
    const production = await Effect.runPromiseExit(
      Effect.provide(
        Effect.flatMap(connector, (c) => c.read(link, checkoutId)),
        layerWith(fake.url, Duration.millis(300), "production")
      )
    )
    expect(Exit.isFailure(production) && Cause.pretty(production.cause)).toContain("for tests only")
  })

  it("an operation of two calls (close: read, then cancel) stays within one bound, not one per call", async () => {
    const link = linkFor(fake.apiKey)
    const { checkoutId } = await opened(link, openRequest({ method: "banktransfer" }))
    // Each call answers within the 400 ms bound; both together do not.
    fake.inject({ method: "GET", path: `/v2/payments/${checkoutId}` }, { kind: "delay-after", ms: 250 })
    fake.inject({ method: "DELETE", path: `/v2/payments/${checkoutId}` }, { kind: "delay-after", ms: 250 })
    const started = Date.now()
    expect(
      await run(
        Effect.flatMap(connector, (c) => c.close(link, checkoutId)),
        Duration.millis(400)
      )
    ).toEqual({
      _tag: "NoAnswer",
      reason: "timeout"
    })
    expect(Date.now() - started).toBeLessThan(1_000)
  })

  it("a Mollie that is not there at all → unavailable", async () => {
    const link = linkFor(fake.apiKey)
    const gone = fake.url
    await fake.close()
    expect(
      await Effect.runPromise(
        Effect.provide(
          Effect.flatMap(connector, (c) => c.read(link, "tr_gone000000")),
          layerWith(gone, Duration.seconds(10))
        )
      )
    ).toEqual({ _tag: "NoAnswer", reason: "unavailable" })
    replaceFake(await startFakeMollie())
  })
})

describe("start-up", () => {
  it("the SDK is imported on first use only: the connector's files import nothing of it but types", () => {
    // Its import costs ~270 ms of CPU and 27 MB of heap (docs/decisions.md), which a server with no Mollie link
    // should not pay at every start.
    for (const file of ["MollieConnector.ts", "mollie/MollieTerms.ts"]) {
      const source = readFileSync(join(import.meta.dirname, "..", "src", "providers", file), "utf8")
      const imports = [...source.matchAll(/^import\s+(type\s+)?[^"]*?from\s+"(mollie-api-typescript[^"]*)"/gm)]
      expect(imports.length, file).toBeGreaterThan(0)
      expect(
        imports.filter((found) => found[1] === undefined).map((found) => found[2]),
        file
      ).toEqual([])
    }
  })
})

describe("transport", () => {
  it("the SDK's calls travel over Kassa's node:http client (MollieTransport.ts), not the global fetch", async () => {
    // The global fetch (undici) cost a create 150–400 µs more CPU in a bare loop (bench/live.ts, "Session 10"):
    // with it out of reach, a create, a read and a refused key still work as before.
    const global = globalThis.fetch
    globalThis.fetch = () => Promise.reject(new Error("the Mollie connector used the global fetch"))
    try {
      const link = linkFor(fake.apiKey)
      const { checkoutId } = await opened(link)
      expect(await readOf(link, checkoutId)).toMatchObject({ _tag: "Checkout", providerPaymentId: checkoutId })
      expect(
        await failureOf(Effect.flatMap(connector, (c) => c.read(linkFor("test_revoked"), checkoutId)))
      ).toMatchObject({ status: 401, field: "secret_key" })
    } finally {
      globalThis.fetch = global
    }
    expect(fake.requests.map((request) => request.endpoint)).toEqual([
      "payments.create",
      "payments.get",
      "payments.get"
    ])
  })
})

describe("KASSA_MOLLIE_API_URL", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromiseExit(
      Effect.provide(Effect.service(ServerConfig), ServerConfig.layer).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
      )
    ).then((exit) => (Exit.isFailure(exit) ? String(exit.cause) : exit.value.mollieApiUrl))
  const production = {
    KASSA_ENV: "production",
    KASSA_ADMIN_TOKEN: "a".repeat(32),
    KASSA_SECRET_KEY: "b".repeat(32),
    KASSA_ALLOW_EMBEDDED: "1"
  }

  it("defaults to https://api.mollie.com; http is refused in production only; a path is refused", async () => {
    expect(await load({})).toBe("https://api.mollie.com")
    expect(await load({ KASSA_MOLLIE_API_URL: "http://127.0.0.1:12112/" })).toBe("http://127.0.0.1:12112")
    expect(await load({ ...production, KASSA_MOLLIE_API_URL: "http://127.0.0.1:12112" })).toContain(
      "KASSA_MOLLIE_API_URL must be https:// in production"
    )
    expect(await load({ KASSA_MOLLIE_API_URL: "https://api.mollie.com/v2" })).toContain(
      "KASSA_MOLLIE_API_URL must be an https:// address with no path"
    )
  })
})
