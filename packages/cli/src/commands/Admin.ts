/**
 * `kassa admin apps|keys|webhook-secret|deliveries|users|audit|provider|payments …`: the operator API (decisions §8,
 * §10) with the admin token. Each group is its own module under `admin/`; what they share is `admin/OperatorCall.ts`.
 */
import * as Command from "effect/cli/Command"
import { apps } from "./admin/Apps.ts"
import { audit } from "./admin/Audit.ts"
import { deliveries } from "./admin/Deliveries.ts"
import { keys } from "./admin/Keys.ts"
import { payments } from "./admin/Payments.ts"
import { provider } from "./admin/Provider.ts"
import { users } from "./admin/Users.ts"
import { webhookSecret } from "./admin/WebhookSecret.ts"

export const admin = Command.make("admin").pipe(
  Command.withDescription(
    "The operator API (KASSA_ADMIN_TOKEN): applications, keys, webhook secrets, deliveries, users, audit log, provider account, live refunds"
  ),
  Command.withSubcommands([apps, keys, webhookSecret, deliveries, users, audit, provider, payments])
)
