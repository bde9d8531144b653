/** `kassa admin apps create|list|show|update`: applications and their settings (flags from the core's catalogue). */
import type { Application as CoreApplication, OperatorSchemas } from "@kassa/core"
import * as OperatorSettings from "@kassa/core/api/OperatorSettings"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Option from "effect/Option"
import { fields, table } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, applicationId, type Request, some } from "./OperatorCall.ts"

type Application = typeof CoreApplication.Application.Encoded

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
    ["Checkout logo", application.checkout_logo_url],
    ["Checkout colour", application.checkout_brand_color],
    ["Created at", application.created_at]
  ])

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

export const apps = Command.make("apps").pipe(
  Command.withDescription("Applications: create, list, show, update"),
  Command.withSubcommands([appsCreate, appsList, appsShow, appsUpdate])
)
