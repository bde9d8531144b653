/** The webhook endpoints accounts register: where events go, which ones, and the secret they are signed with. */
import { randomBytes } from "node:crypto"
import { type Account, find, type Stored } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { missing } from "./Failures.ts"
import { fixture, randomId } from "./Fixtures.ts"
import { isObject, type Json, type JsonObject } from "./Json.ts"

export interface Endpoint extends Stored {
  readonly secret: string
}

export interface WebhookEndpoints {
  /** A new endpoint as the API answers it: with its `secret`, the only time it is shown. */
  readonly create: (account: Account, params: JsonObject) => JsonObject
  readonly remove: (account: Account, id: string) => JsonObject
  /** Every endpoint kept now (a deleted one is gone), for tests that check nothing was left behind. */
  readonly stored: () => ReadonlyArray<JsonObject>
  /** The account's enabled endpoints subscribed to the event type. */
  readonly subscribed: (account: string, type: string) => ReadonlyArray<Endpoint>
}

export const makeWebhookEndpoints = (clock: Clock): WebhookEndpoints => {
  const endpoints = new Map<string, Endpoint>()
  return {
    create: (account, params) => {
      if (typeof params.url !== "string") throw missing("url")
      if (!Array.isArray(params.enabled_events) || params.enabled_events.length === 0) throw missing("enabled_events")
      const object: JsonObject = {
        ...fixture("webhook_endpoint"),
        id: randomId("we"),
        api_version: (params.api_version as Json) ?? null,
        created: clock.now,
        description: (params.description as Json) ?? null,
        enabled_events: params.enabled_events,
        livemode: account.livemode,
        metadata: isObject(params.metadata) ? params.metadata : {},
        status: "enabled",
        url: params.url
      }
      const secret = `whsec_${randomBytes(24).toString("base64url").replace(/[-_]/g, "x")}`
      endpoints.set(String(object.id), { account: account.id, object, secret })
      return { ...object, secret }
    },
    remove: (account, id) => {
      find(endpoints, id, account.id, "webhook endpoint", "id")
      endpoints.delete(id)
      return { ...fixture("deleted_webhook_endpoint"), id }
    },
    stored: () => [...endpoints.values()].map((endpoint) => endpoint.object),
    subscribed: (account, type) =>
      [...endpoints.values()].filter((endpoint) => {
        const enabled = endpoint.object.enabled_events
        return (
          endpoint.account === account &&
          endpoint.object.status === "enabled" &&
          Array.isArray(enabled) &&
          (enabled.includes("*") || enabled.includes(type))
        )
      })
  }
}
