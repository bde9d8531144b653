/**
 * The first start (decisions §9): outside production, a start on a database without applications creates an active
 * "Demo shop" with a test key, and prints once, to stdout, what is needed to try Kassa right away — the test key,
 * the webhook secret, the admin token when this start generated it, and a curl command that creates a payment.
 * A start on a database without dashboard users creates the first operator admin (issue #6) and prints its sign-in
 * once the same way; in production the first user is made with `kassa admin users create` or the operator API.
 *
 * That banner is the one place a secret is ever written out, and it is printed (`Console.log`), not logged: it never
 * goes through the logger, and later starts print only the one-line "Kassa listening on …". Only the keys' hashes and
 * the sealed webhook secret are stored, so a later start could not repeat the banner even if it wanted to.
 */
import { Application, Credentials, WebhookSecret } from "@kassa/core"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import type { SecureRandom } from "effect/crypto"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../applications/ApiKeyRepository.ts"
import { ApplicationRepository, type StoredApplication } from "../applications/ApplicationRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { ServerSecrets, secretsFile } from "../security/ServerSecrets.ts"
import { UserRepository } from "../users/UserRepository.ts"

/** What the first start created; the key and secret exist in clear only here. */
export interface Seeded {
  readonly application: StoredApplication
  readonly testKey: string
  readonly webhookSecret: string
}

export const demoName = "Demo shop"

/**
 * Runs `create` on a first start: outside production, when `table` has no row. The check and `create` share one
 * transaction under a table lock, so two processes starting on the same empty database create one between them.
 */
const onFirstStart = <A, R>(table: "applications" | "users", create: Effect.Effect<A, never, R>) =>
  Effect.gen(function* () {
    const config = yield* ServerConfig
    if (config.environment === "production") return Option.none<A>()
    const sql = yield* SqlClient.SqlClient
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql`LOCK TABLE ${sql(table)} IN SHARE ROW EXCLUSIVE MODE`
          if ((yield* sql`SELECT 1 FROM ${sql(table)} LIMIT 1`).length > 0) return Option.none<A>()
          return Option.some(yield* create)
        })
      )
      .pipe(Effect.orDie)
  })

/** Creates the demo application when the database has no application at all (see {@link onFirstStart}). */
export const seed = Effect.fn("DemoApplication.seed")(function* () {
  const config = yield* ServerConfig
  const applications = yield* ApplicationRepository
  const keys = yield* ApiKeyRepository
  const random = yield* Effect.context<SecureRandom.SecureRandom>()
  return yield* onFirstStart(
    "applications",
    Effect.gen(function* () {
      const webhookSecret = yield* WebhookSecret.generate.pipe(Effect.provide(random))
      const application = yield* applications.create(
        {
          ...Application.defaults,
          name: demoName,
          status: "active",
          // The host name alone matches `return_url`s on any port of it (the core's create rule).
          return_url_host: new URL(config.baseUrl).hostname
        },
        webhookSecret
      )
      const testKey = yield* keys.issue(application.id, "test")
      return { application, testKey: testKey.key, webhookSecret } satisfies Seeded
    })
  )
})

/** The first dashboard user, with its password in clear this once. */
export interface SeededAdmin {
  readonly email: string
  readonly password: string
}

export const firstAdminEmail = "admin@kassa.local"

/**
 * Creates the first operator admin when there is no dashboard user at all (see {@link onFirstStart}); in production
 * the first user is made with `kassa admin users create` or the operator API.
 */
export const seedAdmin = Effect.fn("DemoApplication.seedAdmin")(function* () {
  const users = yield* UserRepository
  const random = yield* Effect.context<SecureRandom.SecureRandom>()
  return yield* onFirstStart(
    "users",
    Effect.gen(function* () {
      const password = yield* Credentials.generatePassword.pipe(Effect.provide(random))
      yield* users.create({ email: firstAdminEmail, password, operatorAdmin: true }).pipe(Effect.orDie)
      return { email: firstAdminEmail, password } satisfies SeededAdmin
    })
  )
})

/** Where the admin token came from, for the banner; its value only when this start generated it. */
export type AdminTokenSource =
  | { readonly _tag: "Generated"; readonly token: string; readonly file: string }
  | { readonly _tag: "Environment" }
  | { readonly _tag: "File"; readonly file: string }

const rule = "=".repeat(100)

/** The ready-to-paste command that creates a test payment with the demo key. */
export const curlCommand = (baseUrl: string, testKey: string) =>
  `curl -s ${baseUrl}/api/v1/payments -H "Authorization: Bearer ${testKey}" -H "Content-Type: application/json" ` +
  `-d '{"amount":1000,"order_reference":"order-1"}'`

/** The first-start banner: framed, so nobody mistakes it for a log line. */
export const banner = (options: {
  readonly baseUrl: string
  readonly seeded: Option.Option<Seeded>
  readonly adminToken: AdminTokenSource
  readonly admin?: Option.Option<SeededAdmin>
}): string => {
  const { baseUrl, seeded, adminToken } = options
  const dashboard = Option.match(options.admin ?? Option.none(), {
    onNone: () => [],
    onSome: ({ email, password }) => [
      "",
      `  Dashboard: ${baseUrl}/dashboard — first operator admin, shown this once:`,
      "",
      `    E-mail           ${email}`,
      `    Password         ${password}`
    ]
  })
  const admin =
    adminToken._tag === "Generated"
      ? `${adminToken.token}   (generated on this start, kept in ${adminToken.file})`
      : adminToken._tag === "Environment"
        ? "from KASSA_ADMIN_TOKEN (not shown)"
        : `kept in ${adminToken.file} (not shown)`
  const lines = Option.match(seeded, {
    onNone: () =>
      adminToken._tag === "Generated"
        ? [
            `  Kassa's admin token was generated on this start. It is shown this once.`,
            "",
            `    Admin token      ${admin}`
          ]
        : [`  No dashboard user existed: created the first operator admin.`],
    onSome: ({ application, testKey, webhookSecret }) => [
      `  First start on an empty database: created the demo application "${application.name}".`,
      "  Its key and webhook secret are shown this once; copy them now.",
      "",
      `    Application      ${application.id} (active, test mode, return_url host ${application.return_url_host})`,
      `    Test API key     ${testKey}`,
      `    Webhook secret   ${webhookSecret}`,
      `    Admin token      ${admin}`,
      "",
      "  Create a test payment:",
      "",
      `    ${curlCommand(baseUrl, testKey)}`
    ]
  })
  return [
    rule,
    `  Kassa at ${baseUrl}`,
    "",
    ...lines,
    ...dashboard,
    "",
    `  Operator API: ${baseUrl}/admin/api/v1 with "Authorization: Bearer <admin token>"`,
    rule
  ].join("\n")
}

/**
 * Runs when the server is listening: seeds on a first start, prints the banner when there is something to show once,
 * then the "Kassa listening on …" line that every start prints.
 */
export const layer = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const secrets = yield* ServerSecrets
    const server = yield* HttpServer.HttpServer
    const seeded = yield* seed()
    const admin = yield* seedAdmin()
    const file = secretsFile(config.dataDir) ?? "this process's memory only (a `memory://` database)"
    const adminToken: AdminTokenSource = secrets.generatedAdminToken
      ? { _tag: "Generated", token: Redacted.value(secrets.adminToken), file }
      : Option.isSome(config.adminToken)
        ? { _tag: "Environment" }
        : { _tag: "File", file }
    if (Option.isSome(seeded) || Option.isSome(admin) || adminToken._tag === "Generated") {
      yield* Console.log(banner({ baseUrl: config.baseUrl, seeded, adminToken, admin }))
    }
    yield* Console.log(
      `Kassa listening on ${HttpServer.formatAddress(server.address)} (base URL ${config.baseUrl}, ${config.environment})`
    )
  })
)
