/** `kassa admin keys create|list|roll|revoke`: an application's API keys (a new key is shown once). */
import type { OperatorSchemas } from "@kassa/core"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { fields, table } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, applicationId } from "./OperatorCall.ts"

type ApiKey = typeof OperatorSchemas.ApiKeyView.Encoded
type IssuedApiKey = typeof OperatorSchemas.IssuedApiKeyView.Encoded

const keyId = Argument.String("key-id").pipe(Argument.withDescription("The key record's id (not the key)"))

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

export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys: create, list, roll, revoke"),
  Command.withSubcommands([keysCreate, keysList, keysRoll, keysRevoke])
)
