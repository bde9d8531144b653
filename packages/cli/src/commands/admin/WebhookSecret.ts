/** `kassa admin webhook-secret rotate`: an application's new webhook secret, shown once. */
import type { OperatorSchemas } from "@kassa/core"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import { call } from "../../Operator.ts"
import { fields, output, reporting } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { applicationId } from "./OperatorCall.ts"

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

export const webhookSecret = Command.make("webhook-secret").pipe(
  Command.withDescription("The webhook secret: rotate"),
  Command.withSubcommands([secretRotate])
)
