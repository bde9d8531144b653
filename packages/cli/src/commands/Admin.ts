/**
 * `kassa admin apps|keys|webhook-secret|deliveries|users|audit|provider|payments …`: the operator API (decisions §8, §10) with
 * the admin token.
 */
import type { Application as CoreApplication, OperatorSchemas, Payment } from "@kassa/core"
import * as OperatorSettings from "@kassa/core/api/OperatorSettings"
import * as Config from "effect/Config"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import type { HttpClientResponse } from "effect/http"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type OperatorSettings as Connection, call, type Endpoint, type OperatorClient } from "../Operator.ts"
import { fields, output, reporting, table } from "../Output.ts"
import * as Settings from "../Settings.ts"

// --- Answers: the contract's schemas, as sent (encoded) ----------------------------------------------------------------

type Application = typeof CoreApplication.Application.Encoded
type ApiKey = typeof OperatorSchemas.ApiKeyView.Encoded
type IssuedApiKey = typeof OperatorSchemas.IssuedApiKeyView.Encoded
type Delivery = typeof OperatorSchemas.DeliveryView.Encoded
type User = typeof OperatorSchemas.UserView.Encoded
type ProviderLink = typeof OperatorSchemas.ProviderLinkView.Encoded

/** What one endpoint's call takes, for requests built from flags (the server judges their values). */
type Request<G extends keyof OperatorClient, E extends keyof OperatorClient[G]> = OperatorClient[G][E] extends (
  request: infer R
) => unknown
  ? R
  : never

// --- Rendering -----------------------------------------------------------------------------------------------------

const renderApplication = (application: Application) =>
  fields([
    ["ID", application.id],
    ["Name", application.name],
    ["Status", application.status],
    ["Methods", application.methods.join(", ")],
    ["Currencies", application.currencies.join(", ")],
    ["Locale", application.locale],
    ["Amounts", `${application.min_amount} to ${application.max_amount} (minor units)`],
    ["Return URL host", application.return_url_host],
    ["Webhook URL", application.webhook_url],
    ["IP allow-list", application.ip_allowlist.length === 0 ? "(any)" : application.ip_allowlist.join(", ")],
    ["Payment TTL", `${application.payment_ttl_seconds} s`],
    ["Rate limit", `${application.rate_limit_per_minute} per minute`],
    ["Created at", application.created_at]
  ])

const renderKeys = (keys: ReadonlyArray<ApiKey>) =>
  keys.length === 0
    ? "No keys."
    : table(
        [
          ["id", "ID"],
          ["mode", "Mode"],
          ["display", "Key"],
          ["created_at", "Created at"],
          ["last_used_at", "Last used at"],
          ["revoked_at", "Revoked at"]
        ],
        keys
      )

const renderIssuedKey = (key: IssuedApiKey) =>
  `${fields([
    ["ID", key.id],
    ["Mode", key.mode],
    ["Key", key.key],
    ["Created at", key.created_at]
  ])}\n\nThe key is shown this once; only its hash is stored.`

const lastAttempt = (delivery: Delivery) => {
  const last = delivery.attempts[delivery.attempts.length - 1]
  if (last === undefined) return "-"
  return last.response_status === null ? (last.error ?? "-") : `HTTP ${last.response_status}`
}

const renderDeliveries = (deliveries: ReadonlyArray<Delivery>, hasMore: boolean) => {
  if (deliveries.length === 0) return "No deliveries."
  const rows = table(
    [
      ["id", "ID"],
      ["event", "Event"],
      ["payment_id", "Payment"],
      ["status", "Status"],
      ["attempts", "Attempts"],
      ["last", "Last answer"],
      ["created_at", "Created at"]
    ],
    deliveries.map((delivery) => ({ ...delivery, attempts: delivery.attempts.length, last: lastAttempt(delivery) }))
  )
  const last = deliveries[deliveries.length - 1]
  return hasMore && last !== undefined ? `${rows}\n\nMore deliveries follow: --starting-after ${last.id}` : rows
}

const renderDelivery = (delivery: Delivery) =>
  `${fields([
    ["ID", delivery.id],
    ["Event", `${delivery.event} (${delivery.event_id})`],
    ["Payment", delivery.payment_id],
    ["Mode", delivery.mode],
    ["Status", delivery.status],
    ["Next attempt at", delivery.next_attempt_at],
    ["Created at", delivery.created_at]
  ])}\n\n${table(
    [
      ["number", "#"],
      ["kind", "Kind"],
      ["started_at", "Started at"],
      ["url", "URL"],
      ["response_status", "Status"],
      ["error", "Error"],
      ["duration_ms", "ms"]
    ],
    delivery.attempts
  )}`

// --- Flags -----------------------------------------------------------------------------------------------------------

const some = <K extends string, A>(key: K, option: Option.Option<A>): { [P in K]?: A } =>
  Option.isSome(option) ? ({ [key]: option.value } as { [P in K]?: A }) : {}

const applicationId = Argument.String("application-id").pipe(Argument.withDescription("The application's id"))
const keyId = Argument.String("key-id").pipe(Argument.withDescription("The key record's id (not the key)"))
const deliveryId = Argument.String("delivery-id").pipe(Argument.withDescription("The delivery's id"))

type SettingName = Exclude<OperatorSettings.SettingName, "name">

/** A setting's flag, from the core's catalogue: its name, its help, and how its text is read. */
const settingFlag = (name: SettingName): Flag.Flag<Option.Option<string | number>> => {
  const { flag, description, input } = OperatorSettings.settings[name]
  const kind: Flag.Flag<string | number> =
    input._tag === "Integer"
      ? Flag.Int(flag)
      : input._tag === "Choice"
        ? Flag.Literals(flag, input.choices)
        : Flag.String(flag)
  return kind.pipe(Flag.withDescription(description), Flag.optional)
}

const settingNames = OperatorSettings.names.filter((name): name is SettingName => name !== "name")

const settingFlags = Object.fromEntries(settingNames.map((name) => [name, settingFlag(name)])) as {
  readonly [K in SettingName]: Flag.Flag<Option.Option<string | number>>
}

type SettingInput = { readonly [K in SettingName]: Option.Option<string | number> }

/** The settings given as flags, as the body's fields; the ones not given are left out. */
const settingsBody = (input: SettingInput) =>
  Object.fromEntries(
    settingNames.flatMap((name) => {
      const value = input[name]
      if (Option.isNone(value)) return []
      return [[name, typeof value.value === "number" ? value.value : OperatorSettings.fromFlag(name, value.value)]]
    })
  )

/** Sends one call and prints its answer: JSON with `--json`, else `render` of it; a failure is reported. */
const answer = <A>(
  input: Connection & { readonly json: boolean },
  at: Endpoint,
  send: (client: OperatorClient) => Effect.Effect<HttpClientResponse.HttpClientResponse, unknown>,
  render: (value: A) => string
) =>
  call<A>(input, at, send).pipe(
    Effect.flatMap((value) => output(input.json, value, render)),
    reporting(input.json)
  )

// --- apps ------------------------------------------------------------------------------------------------------------

const appsCreate = Command.make(
  "create",
  {
    ...Settings.operator,
    name: Flag.String("name").pipe(Flag.withDescription("The application's name")),
    ...settingFlags
  },
  (input) =>
    answer<typeof OperatorSchemas.ApplicationCreated.Encoded>(
      input,
      "operatorApplications.create",
      (client) =>
        client.operatorApplications.create({
          payload: { name: input.name, ...settingsBody(input) } as Request<"operatorApplications", "create">["payload"],
          responseMode: "response-only"
        }),
      ({ application, webhook_secret }) =>
        `${renderApplication(application)}\n${fields([["Webhook secret", webhook_secret]])}\n\nThe webhook secret is shown this once.`
    )
).pipe(Command.withDescription("Create an application (status pending_review unless --status says otherwise)"))

const appsList = Command.make("list", Settings.operator, (input) =>
  answer<typeof OperatorSchemas.ApplicationList.Encoded>(
    input,
    "operatorApplications.list",
    (client) => client.operatorApplications.list({ responseMode: "response-only" }),
    ({ data }) =>
      data.length === 0
        ? "No applications."
        : table(
            [
              ["id", "ID"],
              ["name", "Name"],
              ["status", "Status"],
              ["webhook_url", "Webhook URL"],
              ["created_at", "Created at"]
            ],
            data
          )
  )
).pipe(Command.withDescription("List every application, oldest first"))

const appsShow = Command.make("show", { ...Settings.operator, applicationId }, (input) =>
  answer<Application>(
    input,
    "operatorApplications.retrieve",
    (client) =>
      client.operatorApplications.retrieve({ params: { id: input.applicationId }, responseMode: "response-only" }),
    renderApplication
  )
).pipe(Command.withDescription("Show an application and its settings"))

const appsUpdate = Command.make(
  "update",
  {
    ...Settings.operator,
    applicationId,
    name: Flag.String("name").pipe(Flag.withDescription("The application's new name"), Flag.optional),
    ...settingFlags
  },
  (input) =>
    answer<Application>(
      input,
      "operatorApplications.update",
      (client) =>
        client.operatorApplications.update({
          params: { id: input.applicationId },
          payload: { ...some("name", input.name), ...settingsBody(input) } as Request<
            "operatorApplications",
            "update"
          >["payload"],
          responseMode: "response-only"
        }),
      renderApplication
    )
).pipe(Command.withDescription("Change an application's settings; only the flags given change"))

const apps = Command.make("apps").pipe(
  Command.withDescription("Applications: create, list, show, update"),
  Command.withSubcommands([appsCreate, appsList, appsShow, appsUpdate])
)

// --- keys ------------------------------------------------------------------------------------------------------------

const keysCreate = Command.make(
  "create",
  {
    ...Settings.operator,
    applicationId,
    mode: Flag.Literals("mode", ["test", "live"]).pipe(Flag.withDescription("A test or a live key"))
  },
  (input) =>
    answer<IssuedApiKey>(
      input,
      "operatorKeys.create",
      (client) =>
        client.operatorKeys.create({
          params: { id: input.applicationId },
          payload: { mode: input.mode },
          responseMode: "response-only"
        }),
      renderIssuedKey
    )
).pipe(Command.withDescription("Issue an API key; the key is shown this once"))

const keysList = Command.make("list", { ...Settings.operator, applicationId }, (input) =>
  answer<typeof OperatorSchemas.ApiKeyList.Encoded>(
    input,
    "operatorKeys.list",
    (client) => client.operatorKeys.list({ params: { id: input.applicationId }, responseMode: "response-only" }),
    ({ data }) => renderKeys(data)
  )
).pipe(Command.withDescription("List an application's keys (display form only), revoked ones included"))

const keysRoll = Command.make("roll", { ...Settings.operator, keyId }, (input) =>
  answer<IssuedApiKey>(
    input,
    "operatorKeys.roll",
    (client) => client.operatorKeys.roll({ params: { key_id: input.keyId }, responseMode: "response-only" }),
    renderIssuedKey
  )
).pipe(Command.withDescription("Replace a key with a new one of the same mode; the old one stops working"))

const keysRevoke = Command.make("revoke", { ...Settings.operator, keyId }, (input) =>
  answer<ApiKey>(
    input,
    "operatorKeys.revoke",
    (client) => client.operatorKeys.revoke({ params: { key_id: input.keyId }, responseMode: "response-only" }),
    (revoked) => `Revoked.\n\n${renderKeys([revoked])}`
  )
).pipe(Command.withDescription("Revoke a key"))

const keys = Command.make("keys").pipe(
  Command.withDescription("API keys: create, list, roll, revoke"),
  Command.withSubcommands([keysCreate, keysList, keysRoll, keysRevoke])
)

// --- webhook-secret ----------------------------------------------------------------------------------------------------

const secretRotate = Command.make("rotate", { ...Settings.operator, applicationId }, (input) =>
  call<typeof OperatorSchemas.WebhookSecretCreated.Encoded>(
    input,
    "operatorApplications.rotateWebhookSecret",
    (client) =>
      client.operatorApplications.rotateWebhookSecret({
        params: { id: input.applicationId },
        responseMode: "response-only"
      })
  ).pipe(
    Effect.flatMap((created) =>
      output(
        input.json,
        created,
        ({ webhook_secret }) => `${fields([["Webhook secret", webhook_secret]])}\n\nThe new secret is shown this once.`
      )
    ),
    reporting(input.json)
  )
).pipe(Command.withDescription("Give an application a new webhook secret"))

const webhookSecret = Command.make("webhook-secret").pipe(
  Command.withDescription("The webhook secret: rotate"),
  Command.withSubcommands([secretRotate])
)

// --- deliveries ------------------------------------------------------------------------------------------------------

const deliveriesList = Command.make(
  "list",
  {
    ...Settings.operator,
    applicationId,
    limit: Flag.Int("limit").pipe(Flag.withDescription("Deliveries per page, 1 to 100 (default 10)"), Flag.optional),
    startingAfter: Flag.String("starting-after").pipe(
      Flag.withDescription("Continue after this delivery id (the last of the previous page)"),
      Flag.optional
    ),
    status: Flag.Literals("status", ["pending", "succeeded", "failed"]).pipe(
      Flag.withDescription("Only deliveries in this status"),
      Flag.optional
    ),
    event: Flag.String("event").pipe(
      Flag.withDescription("Only deliveries of this event (payment.paid…)"),
      Flag.optional
    ),
    paymentId: Flag.String("payment-id").pipe(Flag.withDescription("Only deliveries of this payment"), Flag.optional),
    mode: Flag.Literals("mode", ["test", "live"]).pipe(Flag.withDescription("Only test or only live"), Flag.optional)
  },
  (input) => {
    const query = {
      ...some("limit", input.limit),
      ...some("starting_after", input.startingAfter),
      ...some("status", input.status),
      ...some("event", input.event),
      ...some("payment_id", input.paymentId),
      ...some("mode", input.mode)
    } as Request<"operatorDeliveries", "list">["query"]
    return answer<typeof OperatorSchemas.DeliveryList.Encoded>(
      input,
      "operatorDeliveries.list",
      (client) =>
        client.operatorDeliveries.list({ params: { id: input.applicationId }, query, responseMode: "response-only" }),
      ({ data, has_more }) => renderDeliveries(data, has_more)
    )
  }
).pipe(Command.withDescription("List an application's webhook deliveries, newest first, one page"))

const deliveriesResend = Command.make("resend", { ...Settings.operator, deliveryId }, (input) =>
  answer<Delivery>(
    input,
    "operatorDeliveries.resend",
    (client) => client.operatorDeliveries.resend({ params: { id: input.deliveryId }, responseMode: "response-only" }),
    (resent) => `Resending.\n\n${renderDelivery(resent)}`
  )
).pipe(Command.withDescription("Send a delivery again now, whatever its status"))

const deliveries = Command.make("deliveries").pipe(
  Command.withDescription("Webhook deliveries: list, resend"),
  Command.withSubcommands([deliveriesList, deliveriesResend])
)

// --- users ----------------------------------------------------------------------------------------------------------

const userId = Argument.String("user-id").pipe(Argument.withDescription("The user's id"))

const renderUsers = (users: ReadonlyArray<User>) =>
  users.length === 0
    ? "No users."
    : table(
        [
          ["id", "ID"],
          ["email", "E-mail"],
          ["operator_admin", "Operator admin"],
          ["active", "Active"],
          ["memberships", "Roles"],
          ["last_login_at", "Last sign-in"]
        ],
        users.map((user) => ({
          ...user,
          operator_admin: user.operator_admin ? "yes" : "no",
          active: user.active ? "yes" : "no",
          memberships: user.memberships.map((membership) => `${membership.role}@${membership.application_id}`).join(" ")
        }))
      )

const passwordFlag = Flag.String("password").pipe(
  Flag.withDescription("At least 12 characters; without it a random one is made and shown this once"),
  Flag.optional
)

/** The password given with `--password`, or a random one (which the command then shows once). */
const chosenOrGenerated = (given: Option.Option<string>) =>
  Option.match(given, {
    onSome: (password) => Effect.succeed({ password, generated: false }),
    onNone: () =>
      // Loaded here, not at the top: only these two commands need it, and @kassa/core's modules would slow every start.
      Effect.promise(() => import("@kassa/core/dashboard/Credentials")).pipe(
        Effect.flatMap((Credentials) => Credentials.generatePassword),
        Effect.map((password) => ({ password, generated: true }))
      )
  })

const usersCreate = Command.make(
  "create",
  {
    ...Settings.operator,
    email: Flag.String("email").pipe(Flag.withDescription("The user's e-mail address (their sign-in)")),
    password: passwordFlag,
    operatorAdmin: Flag.Boolean("operator-admin").pipe(
      Flag.withDescription("Service staff: sees and manages every application"),
      Flag.withDefault(false)
    )
  },
  (input) =>
    Effect.gen(function* () {
      const { password, generated } = yield* chosenOrGenerated(input.password)
      const user = yield* call<User>(input, "operatorUsers.create", (client) =>
        client.operatorUsers.create({
          payload: { email: input.email, password, operator_admin: input.operatorAdmin },
          responseMode: "response-only"
        })
      )
      return yield* output(
        input.json,
        generated ? { ...user, password } : user,
        () =>
          `${fields([
            ["ID", user.id],
            ["E-mail", user.email],
            ["Operator admin", user.operator_admin ? "yes" : "no"],
            ...(generated ? ([["Password", password]] as const) : [])
          ])}${generated ? "\n\nThe password is shown this once." : ""}`
      )
    }).pipe(reporting(input.json))
).pipe(Command.withDescription("Create a dashboard user"))

const usersList = Command.make("list", { ...Settings.operator }, (input) =>
  answer<typeof OperatorSchemas.UserList.Encoded>(
    input,
    "operatorUsers.list",
    (client) => client.operatorUsers.list({ responseMode: "response-only" }),
    ({ data }) => renderUsers(data)
  )
).pipe(Command.withDescription("List dashboard users with their roles"))

const membershipApplication = Flag.String("application").pipe(Flag.withDescription("The application's id"))

const usersGrant = Command.make(
  "grant",
  {
    ...Settings.operator,
    userId,
    application: membershipApplication,
    role: Flag.Literals("role", ["owner", "developer", "viewer"]).pipe(
      Flag.withDescription("owner (everything), developer (keys, webhooks, deliveries, payments), viewer (read only)")
    )
  },
  (input) =>
    answer<User>(
      input,
      "operatorUsers.setMembership",
      (client) =>
        client.operatorUsers.setMembership({
          params: { id: input.userId, application_id: input.application },
          payload: { role: input.role },
          responseMode: "response-only"
        }),
      (updated) => renderUsers([updated])
    )
).pipe(Command.withDescription("Give a user a role in an application (replaces their role there)"))

const usersRemove = Command.make(
  "remove",
  { ...Settings.operator, userId, application: membershipApplication },
  (input) =>
    answer<User>(
      input,
      "operatorUsers.removeMembership",
      (client) =>
        client.operatorUsers.removeMembership({
          params: { id: input.userId, application_id: input.application },
          responseMode: "response-only"
        }),
      (updated) => renderUsers([updated])
    )
).pipe(Command.withDescription("Remove a user from an application"))

/** `PATCH /users/{id}` with one change, answered as the changed user. */
const updateUser = (
  input: Connection & { readonly userId: string },
  change: Request<"operatorUsers", "update">["payload"]
) =>
  call<User>(input, "operatorUsers.update", (client) =>
    client.operatorUsers.update({ params: { id: input.userId }, payload: change, responseMode: "response-only" })
  )

const usersSetPassword = Command.make(
  "set-password",
  {
    ...Settings.operator,
    userId,
    password: passwordFlag
  },
  (input) =>
    Effect.gen(function* () {
      const { password, generated } = yield* chosenOrGenerated(input.password)
      const user = yield* updateUser(input, { password })
      return yield* output(input.json, generated ? { ...user, password } : user, () =>
        generated
          ? `${fields([
              ["E-mail", user.email],
              ["Password", password]
            ])}\n\nThe password is shown this once. Every session of the user has ended.`
          : `New password set for ${user.email}. Every session of the user has ended.`
      )
    }).pipe(reporting(input.json))
).pipe(Command.withDescription("Give a user a new password (clears the lock-out and ends every session of the user)"))

const usersDeactivate = Command.make("deactivate", { ...Settings.operator, userId }, (input) =>
  updateUser(input, { active: false }).pipe(
    Effect.flatMap((user) => output(input.json, user, (updated) => renderUsers([updated]))),
    reporting(input.json)
  )
).pipe(Command.withDescription("Deactivate a user: sign-in refused, every session ends, roles kept"))

const usersReactivate = Command.make("reactivate", { ...Settings.operator, userId }, (input) =>
  updateUser(input, { active: true }).pipe(
    Effect.flatMap((user) => output(input.json, user, (updated) => renderUsers([updated]))),
    reporting(input.json)
  )
).pipe(Command.withDescription("Let a deactivated user sign in again"))

const users = Command.make("users").pipe(
  Command.withDescription("Dashboard users: create, list, grant, remove, set-password, deactivate, reactivate"),
  Command.withSubcommands([
    usersCreate,
    usersList,
    usersGrant,
    usersRemove,
    usersSetPassword,
    usersDeactivate,
    usersReactivate
  ])
)

// --- audit ----------------------------------------------------------------------------------------------------------

const audit = Command.make(
  "audit",
  {
    ...Settings.operator,
    limit: Flag.Int("limit").pipe(Flag.withDescription("Entries, 1 to 100 (default 50)"), Flag.optional),
    application: Flag.String("application").pipe(Flag.withDescription("Only this application's"), Flag.optional)
  },
  (input) => {
    const query = {
      ...some("limit", input.limit),
      ...some("application_id", input.application)
    } as Request<"operatorUsers", "audit">["query"]
    return answer<typeof OperatorSchemas.AuditList.Encoded>(
      input,
      "operatorUsers.audit",
      (client) => client.operatorUsers.audit({ query, responseMode: "response-only" }),
      ({ data }) =>
        data.length === 0
          ? "No entries."
          : table(
              [
                ["at", "At"],
                ["actor", "Actor"],
                ["action", "Action"],
                ["application_id", "Application"],
                ["target", "Target"],
                ["ip", "Address"]
              ],
              data
            )
    )
  }
).pipe(Command.withDescription("The audit log: every dashboard and operator action, newest first"))

// --- provider -------------------------------------------------------------------------------------------------------

const renderLink = (link: ProviderLink) =>
  fields([
    ["Provider", link.provider],
    ["Account", link.account_id],
    ["Key", link.key_display],
    ["Mode", link.livemode ? "live" : "test (Stripe test cards)"],
    ["Webhook endpoint", link.webhook_endpoint_id],
    ["Status", link.status],
    ["Linked at", link.linked_at],
    ["Retired at", link.retired_at]
  ])

const providerLink = Command.make(
  "link",
  {
    ...Settings.operator,
    applicationId,
    // From the environment by default, so the key stays out of shell history and the process list.
    secretKey: Flag.Redacted("secret-key").pipe(
      Flag.withDescription(
        "The Stripe secret or restricted key, sk_live_…/rk_live_… (sk_test_…/rk_test_… to rehearse) (env STRIPE_SECRET_KEY)"
      ),
      Flag.withFallbackConfig(Config.Redacted("STRIPE_SECRET_KEY"))
    )
  },
  (input) =>
    answer<ProviderLink>(
      input,
      "operatorProviderAccounts.link",
      (client) =>
        client.operatorProviderAccounts.link({
          params: { id: input.applicationId },
          payload: { provider: "stripe", secret_key: Redacted.value(input.secretKey) },
          responseMode: "response-only"
        }),
      (linked) =>
        `${renderLink(linked)}\n\nLinked. The key is stored encrypted and shown only as ${linked.key_display} from now on.`
    )
).pipe(
  Command.withDescription(
    "Link a Stripe account to an application: the key is checked with Stripe and a webhook endpoint is made there; a previous link is retired"
  )
)

const providerShow = Command.make("show", { ...Settings.operator, applicationId }, (input) =>
  answer<ProviderLink>(
    input,
    "operatorProviderAccounts.show",
    (client) =>
      client.operatorProviderAccounts.show({ params: { id: input.applicationId }, responseMode: "response-only" }),
    renderLink
  )
).pipe(Command.withDescription("Show the application's linked Stripe account (not_found when none)"))

const providerRetire = Command.make("retire", { ...Settings.operator, applicationId }, (input) =>
  answer<ProviderLink>(
    input,
    "operatorProviderAccounts.retire",
    (client) =>
      client.operatorProviderAccounts.retire({ params: { id: input.applicationId }, responseMode: "response-only" }),
    (retired) =>
      `${renderLink(retired)}\n\nRetired: new live payments are refused until another account is linked; payments it opened still settle.`
  )
).pipe(Command.withDescription("Retire the application's linked Stripe account"))

const provider = Command.make("provider").pipe(
  Command.withDescription("The payment provider account (Stripe) of live payments: link, show, retire"),
  Command.withSubcommands([providerLink, providerShow, providerRetire])
)

// --- payments -------------------------------------------------------------------------------------------------------

const paymentsRefund = Command.make(
  "refund",
  {
    ...Settings.operator,
    paymentId: Argument.String("payment-id").pipe(Argument.withDescription("The live payment's id")),
    amount: Flag.Int("amount").pipe(
      Flag.withDescription("Minor units to refund (default: everything still refundable)"),
      Flag.optional
    ),
    reason: Flag.String("reason").pipe(Flag.withDescription("Why, at most 255 characters"), Flag.optional)
  },
  (input) =>
    answer<typeof Payment.Payment.Encoded>(
      input,
      "operatorPayments.refund",
      (client) =>
        client.operatorPayments.refund({
          params: { id: input.paymentId },
          payload: { ...some("amount", input.amount), ...some("reason", input.reason) } as Request<
            "operatorPayments",
            "refund"
          >["payload"],
          responseMode: "response-only"
        }),
      (refunded) => {
        const newest = refunded.refunds.at(-1)
        const outcome =
          newest?.status === "succeeded"
            ? "Stripe refunded it."
            : newest?.status === "failed"
              ? "Stripe refused it; the amount is refundable again."
              : "Stripe has not answered yet; Kassa asks again in the background (the refund stays pending)."
        return `${fields([
          ["Payment", refunded.id],
          ["Status", refunded.status],
          ["Refunded", `${refunded.refunded_amount} of ${refunded.amount} ${refunded.currency} (minor units)`],
          ["Refund", newest?.id ?? null],
          ["Refund status", newest?.status ?? null],
          ["Refund amount", newest === undefined ? null : String(newest.amount)]
        ])}\n\n${outcome}`
      }
    )
).pipe(
  Command.withDescription(
    "Refund a live payment through its payment provider (Stripe), as service staff; audited like the dashboard's"
  )
)

const payments = Command.make("payments").pipe(
  Command.withDescription("Live payments: refund"),
  Command.withSubcommands([paymentsRefund])
)

export const admin = Command.make("admin").pipe(
  Command.withDescription(
    "The operator API (KASSA_ADMIN_TOKEN): applications, keys, webhook secrets, deliveries, users, audit log, provider account, live refunds"
  ),
  Command.withSubcommands([apps, keys, webhookSecret, deliveries, users, audit, provider, payments])
)
