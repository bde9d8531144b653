/**
 * The first start (decisions §9), black-box: the real entry point (`src/main.ts`) in a child process with settings
 * from the environment, as `npm start` runs it, on the embedded PGlite in a fresh data directory or on a fresh
 * PostgreSQL database. What a start prints is read from its stdout and stderr.
 */
import { spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { ApiKey } from "@kassa/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { afterAll, describe, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import * as KassaServer from "../src/KassaServer.ts"
import { DashboardClient } from "./support/DashboardClient.ts"
import { seedDataDir } from "./support/PgliteImage.ts"
import { compileCache } from "./support/ServerProcess.ts"
import { type DatabaseKind, databases, freePort, maintenance, postgresUrl } from "./support/TestServer.ts"

const mainPath = fileURLToPath(new URL("../src/main.ts", import.meta.url))
const startTimeout = 60_000

/** A place for one installation: a data directory, and on PostgreSQL its own database. */
interface Installation {
  readonly dataDir: string
  readonly databaseUrl: string | undefined
}

const cleanups: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup()
})

/**
 * A new installation. `migrated` has its PGlite hold a migrated database without data already (PgliteImage): to the
 * server still a first start (no application, no user, no secrets file), without initdb and the migrations (5–8 s of
 * CPU), which the test of the very first start keeps.
 */
const install = async (
  database: DatabaseKind,
  options: { readonly migrated?: boolean } = {}
): Promise<Installation> => {
  const dataDir = mkdtempSync(join(tmpdir(), "kassa-seed-"))
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }))
  if (database === "pglite") {
    if (options.migrated === true) await seedDataDir(dataDir)
    return { dataDir, databaseUrl: undefined }
  }
  const name = `kassa_seed_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await maintenance(`CREATE DATABASE ${name}`)
  cleanups.push(() => maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return { dataDir, databaseUrl: Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString() }
}

interface Run {
  readonly port: number
  /** Everything the process wrote to stdout and stderr, once it stopped. */
  readonly stop: () => Promise<{ readonly stdout: string; readonly stderr: string }>
  readonly stdout: () => string
  readonly admin: (path: string, token: string, init?: RequestInit) => Promise<Response>
}

/** Starts `src/main.ts` with only the given settings in its environment; resolves once it says it listens. */
const start = async (installation: Installation, env: Record<string, string> = {}): Promise<Run> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["--conditions=@kassa/source", mainPath], {
    env: {
      PATH: process.env.PATH ?? "",
      ...compileCache,
      KASSA_PORT: String(port),
      KASSA_DATA_DIR: installation.dataDir,
      ...(installation.databaseUrl === undefined ? {} : { DATABASE_URL: installation.databaseUrl }),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
  })
  const exited = once(child, "exit")
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill("SIGKILL")
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no start within ${startTimeout} ms:\n${stdout}${stderr}`)),
      startTimeout
    )
    child.stdout.on("data", () => {
      if (stdout.includes("Kassa listening on")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${code} before listening:\n${stdout}${stderr}`))
    })
  })
  return {
    port,
    stdout: () => stdout,
    stop: async () => {
      child.kill("SIGTERM")
      await exited
      return { stdout, stderr }
    },
    admin: (path, token, init = {}) =>
      fetch(`http://127.0.0.1:${port}/admin/api/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) }
      })
  }
}

/** The framed banner's lines, and every other line of the output. */
const splitBanner = (output: string) => {
  const lines = output.split("\n")
  const rules = lines.flatMap((line, index) => (/^=+$/.test(line) ? [index] : []))
  const [first, last] = [rules[0], rules[rules.length - 1]]
  if (first === undefined || last === undefined || first === last) return { banner: [], rest: lines }
  return { banner: lines.slice(first, last + 1), rest: [...lines.slice(0, first), ...lines.slice(last + 1)] }
}

const field = (banner: ReadonlyArray<string>, label: string) => {
  const line = banner.find((candidate) => candidate.trimStart().startsWith(label))
  return line?.trim().slice(label.length).trim().split(/\s+/)[0]
}

/** Runs an effect against the stopped installation's database, with the secrets its data directory keeps. */
const inspect = <A>(
  installation: Installation,
  effect: Effect.Effect<A, never, ApplicationRepository | ApiKeyRepository>
): Promise<A> =>
  Effect.runPromise(
    effect.pipe(
      Effect.provide(
        KassaServer.Services.pipe(
          Layer.provide(
            ServerConfig.layerWith({
              dataDir: installation.dataDir,
              databaseUrl: Option.map(Option.fromNullishOr(installation.databaseUrl), Redacted.make)
            })
          )
        )
      )
    )
  )

const secretPattern = /pk_(test|live)_[0-9A-Za-z]{32}|whsec_[0-9A-Za-z]{32}/

// The PGlite and the PostgreSQL installations are independent (each its own data directory, and its own database):
// their starts, each the work of a child process, run side by side. Within one database the tests run one after the
// other, so no more than two starts (a PGlite one and a PostgreSQL one) share the machine at once.
describe.concurrent.each(databases)("first start on %s", (database) => {
  it("seeds a demo application once, prints its secrets once in a banner, and later starts print none", {
    concurrent: false,
    timeout: 4 * startTimeout
  }, async ({ expect }) => {
    const installation = await install(database)
    const first = await start(installation)
    const base = `http://localhost:${first.port}`
    const { banner } = splitBanner(first.stdout())
    expect(banner.length).toBeGreaterThan(0)

    const testKey = field(banner, "Test API key") ?? ""
    const webhookSecret = field(banner, "Webhook secret") ?? ""
    const adminToken = field(banner, "Admin token") ?? ""
    expect(testKey).toMatch(/^pk_test_[0-9A-Za-z]{32}$/)
    expect(webhookSecret).toMatch(/^whsec_[0-9A-Za-z]{32}$/)
    expect(adminToken).toMatch(/^[A-Za-z0-9_-]{40,}$/)
    expect(banner.join("\n")).toContain("generated")
    expect(banner.join("\n")).toContain(base)
    expect(banner.map((line) => line.trim())).toContain(
      `curl -s ${base}/api/v1/payments -H "Authorization: Bearer ${testKey}" -H "Content-Type: application/json" ` +
        `-d '{"amount":1000,"order_reference":"order-1"}'`
    )
    // The first operator admin's sign-in, shown once, works in the dashboard.
    const adminEmail = field(banner, "E-mail") ?? ""
    const adminPassword = field(banner, "Password") ?? ""
    expect(adminEmail).toBe("admin@kassa.local")
    expect(adminPassword).toMatch(/^[0-9A-Za-z]{20}$/)
    expect(banner.join("\n")).toContain(`${base}/dashboard`)
    const dashboard = new DashboardClient(`http://127.0.0.1:${first.port}`, base)
    const signedIn = await dashboard.login(adminEmail, adminPassword)
    expect(signedIn.status).toBe(303)
    expect((await dashboard.get("/dashboard")).location).toBe("/dashboard/operator")
    // A banner, not log lines: no timestamp or level in front.
    for (const line of banner) expect(line).not.toMatch(/^\[\d{2}:\d{2}/)

    // The printed curl command creates a test payment (sent to the bound address: `localhost` may resolve to ::1).
    const created = await fetch(`http://127.0.0.1:${first.port}/api/v1/payments`, {
      method: "POST",
      headers: { Authorization: `Bearer ${testKey}`, "Content-Type": "application/json" },
      body: '{"amount":1000,"order_reference":"order-1"}'
    })
    expect(created.status).toBe(201)
    expect(await created.json()).toMatchObject({
      status: "pending",
      mode: "test",
      amount: 1000,
      currency: "EUR",
      order_reference: "order-1"
    })

    // The printed admin token works; the demo application is there, active, with its one test key.
    const listed = await first.admin("/applications", adminToken)
    expect(listed.status).toBe(200)
    const { data } = (await listed.json()) as { data: Array<Record<string, unknown>> }
    expect(data).toEqual([
      expect.objectContaining({
        name: "Demo shop",
        status: "active",
        return_url_host: "localhost",
        webhook_url: null,
        methods: ["card"],
        currencies: ["EUR"]
      })
    ])
    const applicationId = String(data[0]?.id)
    const keys = (await (await first.admin(`/applications/${applicationId}/keys`, adminToken)).json()) as {
      data: Array<{ mode: string; display: string; revoked_at: string | null }>
    }
    expect(keys.data).toEqual([
      expect.objectContaining({
        mode: "test",
        display: ApiKey.display(ApiKey.ApiKey.make(testKey)),
        revoked_at: null
      })
    ])

    const firstOutput = await first.stop()
    // The secrets appear in the banner on stdout and nowhere else: no log line, nothing on stderr.
    for (const secret of [testKey, webhookSecret, adminToken, adminPassword]) {
      for (const line of splitBanner(firstOutput.stdout).rest) expect(line).not.toContain(secret)
      expect(firstOutput.stderr).not.toContain(secret)
    }

    const second = await start(installation)
    const relisted = await second.admin("/applications", adminToken)
    expect(relisted.status).toBe(200)
    // Seeded exactly once.
    expect(((await relisted.json()) as { data: Array<unknown> }).data).toHaveLength(1)
    const secondOutput = await second.stop()
    const all = secondOutput.stdout + secondOutput.stderr
    expect(splitBanner(secondOutput.stdout).banner).toEqual([])
    expect(all).toMatch(/^Kassa listening on http:\/\/127\.0\.0\.1:\d+ .*$/m)
    for (const secret of [testKey, webhookSecret, adminToken, adminPassword]) expect(all).not.toContain(secret)
    expect(all).not.toMatch(secretPattern)

    // The printed key is the demo application's test key, and the printed secret its webhook secret.
    const stored = await inspect(
      installation,
      Effect.gen(function* () {
        const authenticated = yield* (yield* ApiKeyRepository).authenticate(testKey)
        const application = Option.getOrThrow(authenticated).application
        const secrets = yield* (yield* ApplicationRepository).webhookSecrets(application.id)
        return { application, key: Option.getOrThrow(authenticated).key, secrets: Option.getOrThrow(secrets) }
      })
    )
    expect(stored.application.id).toBe(applicationId)
    expect(stored.key.mode).toBe("test")
    expect(stored.secrets.current).toBe(webhookSecret)
  })

  it("does not print an admin token set in KASSA_ADMIN_TOKEN; one generated later is shown once, without a new seed", {
    concurrent: false,
    timeout: 4 * startTimeout
  }, async ({ expect }) => {
    const installation = await install(database, { migrated: true })
    const token = `env-admin-token-${crypto.randomUUID()}`
    const first = await start(installation, { KASSA_ADMIN_TOKEN: token })
    const { banner } = splitBanner(first.stdout())
    expect(field(banner, "Test API key")).toMatch(/^pk_test_/)
    expect(banner.join("\n")).toContain("from KASSA_ADMIN_TOKEN (not shown)")
    expect((await first.admin("/applications", token)).status).toBe(200)
    const firstOutput = await first.stop()
    expect(firstOutput.stdout + firstOutput.stderr).not.toContain(token)

    // Without the variable the next start generates a token: shown once, and the database is not seeded again.
    const second = await start(installation)
    const secondBanner = splitBanner(second.stdout()).banner
    const generated = field(secondBanner, "Admin token") ?? ""
    expect(generated).toMatch(/^[A-Za-z0-9_-]{40,}$/)
    expect(secondBanner.join("\n")).not.toMatch(secretPattern)
    const listed = await second.admin("/applications", generated)
    expect(((await listed.json()) as { data: Array<unknown> }).data).toHaveLength(1)
    expect((await second.admin("/applications", token)).status).toBe(401)
    await second.stop()

    const third = await start(installation)
    const thirdOutput = await third.stop()
    expect(splitBanner(thirdOutput.stdout).banner).toEqual([])
    expect(thirdOutput.stdout + thirdOutput.stderr).not.toContain(generated)
  })

  it("never seeds in production", { concurrent: false, timeout: 2 * startTimeout }, async ({ expect }) => {
    const installation = await install(database, { migrated: true })
    const token = `prod-admin-token-${crypto.randomUUID()}`
    const run = await start(installation, {
      KASSA_ENV: "production",
      // On the PGlite run: production refuses the embedded database unless told.
      KASSA_ALLOW_EMBEDDED: "1",
      KASSA_ADMIN_TOKEN: token,
      KASSA_SECRET_KEY: `prod-secret-key-${crypto.randomUUID()}`
    })
    const listed = await run.admin("/applications", token)
    expect(listed.status).toBe(200)
    expect(await listed.json()).toEqual({ data: [] })
    const output = await run.stop()
    // In production the start line is a JSON log line too (issue 14 §1).
    expect(output.stdout).toMatch(/^\{"message":"Kassa listening on [^"]*production\)"/m)
    expect(splitBanner(output.stdout).banner).toEqual([])
    expect(output.stdout + output.stderr).not.toMatch(secretPattern)
    expect(output.stdout + output.stderr).not.toContain(token)
  })
})
