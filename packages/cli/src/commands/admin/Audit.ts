/** `kassa admin audit`: the audit log, every dashboard and operator action, newest first. */
import type { OperatorSchemas } from "@kassa/core"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { table } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, type Request, some } from "./OperatorCall.ts"

export const audit = Command.make(
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
