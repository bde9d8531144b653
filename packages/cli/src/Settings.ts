/** Flags every command group shares, each falling back to its environment variable. */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Flag from "effect/cli/Flag"
import type * as Option from "effect/Option"

export const defaultBaseUrl = "http://localhost:4000"

export const json = Flag.Boolean("json").pipe(
  Flag.withDescription('Print machine-readable JSON on stdout (errors too, as {"error":{…}})'),
  Flag.withDefault(false)
)

export const baseUrl = Flag.String("base-url").pipe(
  Flag.withDescription(`Where the Kassa server answers (env KASSA_BASE_URL, default ${defaultBaseUrl})`),
  Flag.withFallbackConfig(Config.String("KASSA_BASE_URL").pipe(Config.withDefault(defaultBaseUrl)))
)

export const apiKey = Flag.Redacted("api-key").pipe(
  Flag.withDescription("The application's API key, pk_test_… or pk_live_… (env KASSA_API_KEY)"),
  Flag.withFallbackConfig(Config.Redacted("KASSA_API_KEY"))
)

export const adminToken = Flag.Redacted("admin-token").pipe(
  Flag.withDescription("The operator's admin token (env KASSA_ADMIN_TOKEN)"),
  Flag.withFallbackConfig(Config.Redacted("KASSA_ADMIN_TOKEN"))
)

export const webhookSecret = Flag.Redacted("secret").pipe(
  Flag.withDescription("The application's webhook secret, whsec_… (env KASSA_WEBHOOK_SECRET)"),
  Flag.withFallbackConfig(Config.Redacted("KASSA_WEBHOOK_SECRET"))
)

/** The flags of commands that call the merchant API. */
export const merchant = { json, baseUrl, apiKey }
/** The flags of commands that call the operator API. */
export const operator = { json, baseUrl, adminToken }

/** The flag of the commands that run the server's own code (serve, migrate, secrets). */
export const dataDir = Flag.String("data-dir").pipe(
  Flag.withDescription("Where the embedded database keeps its files (env KASSA_DATA_DIR, default ./.kassa)"),
  Flag.optional
)

/**
 * The server's settings for those commands: the flags given laid over their variables in the current
 * `ConfigProvider` (the environment; in a test's in-process run, the environment it gives).
 */
export const serverSettings = (flags: Readonly<Record<string, Option.Option<string>>>) =>
  ConfigProvider.layerAdd(
    ConfigProvider.fromEnvRecord(
      Object.fromEntries(
        Object.entries(flags).flatMap(([name, value]) => (value._tag === "Some" ? [[name, value.value]] : []))
      )
    ),
    { asPrimary: true }
  )
