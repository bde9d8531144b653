/**
 * The first start (decisions §9): outside production, a start on a database without applications creates an active
 * "Demo shop" with a test key, and prints once, to stdout, what is needed to try Kassa right away — the test key,
 * the webhook secret, the admin token when this start generated it, and a curl command that creates a payment.
 *
 * That banner is the one place a secret is ever written out, and it is printed (`Console.log`), not logged: it never
 * goes through the logger, and later starts print only the one-line "Kassa listening on …". Only the keys' hashes and
 * the sealed webhook secret are stored, so a later start could not repeat the banner even if it wanted to.
 */
import { join } from "node:path"
import { Application, WebhookSecret } from "@kassa/core"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import type { SecureRandom } from "effect/crypto"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../applications/ApiKeyRepository.ts"
import { ApplicationRepository, type StoredApplication } from "../applications/ApplicationRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

/** What the first start created; the key and secret exist in clear only here. */
export interface Seeded {
  readonly application: StoredApplication
  readonly testKey: string
  readonly webhookSecret: string
}

export const demoName = "Demo shop"

/**
 * Creates the demo application when the database has no application at all; none otherwise, and always none in
 * production. The check and the inserts share one transaction under a table lock, so two processes starting on the
 * same empty database create one demo application between them.
 */
export const seed = Effect.fn("DemoApplication.seed")(function* () {
  const config = yield* ServerConfig
  if (config.environment === "production") return Option.none<Seeded>()
  const sql = yield* SqlClient.SqlClient
  const applications = yield* ApplicationRepository
  const keys = yield* ApiKeyRepository
  const random = yield* Effect.context<SecureRandom.SecureRandom>()
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        yield* sql`LOCK TABLE applications IN SHARE ROW EXCLUSIVE MODE`
        const existing = yield* sql`SELECT 1 FROM applications LIMIT 1`
        if (existing.length > 0) return Option.none<Seeded>()
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
        return Option.some<Seeded>({ application, testKey: testKey.key, webhookSecret })
      })
    )
    .pipe(Effect.orDie)
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
}): string => {
  const { baseUrl, seeded, adminToken } = options
  const admin =
    adminToken._tag === "Generated"
      ? `${adminToken.token}   (generated on this start, kept in ${adminToken.file})`
      : adminToken._tag === "Environment"
        ? "from KASSA_ADMIN_TOKEN (not shown)"
        : `kept in ${adminToken.file} (not shown)`
  const lines = Option.match(seeded, {
    onNone: () => [
      `  Kassa's admin token was generated on this start. It is shown this once.`,
      "",
      `    Admin token      ${admin}`
    ],
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
    const file = join(config.dataDir, "secrets.json")
    const adminToken: AdminTokenSource = secrets.generatedAdminToken
      ? { _tag: "Generated", token: Redacted.value(secrets.adminToken), file }
      : Option.isSome(config.adminToken)
        ? { _tag: "Environment" }
        : { _tag: "File", file }
    if (Option.isSome(seeded) || adminToken._tag === "Generated") {
      yield* Console.log(banner({ baseUrl: config.baseUrl, seeded, adminToken }))
    }
    yield* Console.log(
      `Kassa listening on ${HttpServer.formatAddress(server.address)} (base URL ${config.baseUrl}, ${config.environment})`
    )
  })
)
