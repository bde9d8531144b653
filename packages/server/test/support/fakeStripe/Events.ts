/**
 * Stripe's events: making them (a snapshot of the object), signing them, and sending them to the account's webhook
 * endpoints, with the faults tests ask for (dropped, duplicated, delayed, held and released in another order).
 */
import { createHmac } from "node:crypto"
import type { Accounts } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { fixture, randomId } from "./Fixtures.ts"
import { clone, type JsonObject } from "./Json.ts"
import type { Endpoint, WebhookEndpoints } from "./WebhookEndpoints.ts"

/** What happens to the next events sent (each rule applies to `count` events, of `type` when given). */
export interface EventFault {
  readonly drop?: boolean
  /** Extra copies sent after the first (Stripe: "endpoints might occasionally receive the same event more than once"). */
  readonly duplicates?: number
  readonly delayMs?: number
  readonly type?: string
  readonly count?: number
}

export interface Delivery {
  readonly eventId: string
  readonly type: string
  readonly endpointId: string
  readonly url: string
  /** The endpoint's HTTP status, or the network error. */
  readonly status: number | string
}

/** The API request an event came from (`request` on the event); both null when no API request caused it. */
export interface EventRequest {
  readonly id: string | null
  readonly key: string | null
}

export const noRequest: EventRequest = { id: null, key: null }

/**
 * Stripe's signature (https://docs.stripe.com/webhooks#verify-manually): `Stripe-Signature: t=<unix>,v1=<hex>`,
 * v1 being HMAC-SHA256 of `<t>.<raw body>` keyed with the endpoint's `whsec_…` secret.
 */
export const sign = (payload: string, secret: string, timestamp: number) =>
  `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${payload}`, "utf8").digest("hex")}`

export interface Events {
  /** Every event Stripe created (sent or not), oldest first. */
  readonly events: ReadonlyArray<JsonObject>
  readonly deliveries: ReadonlyArray<Delivery>
  readonly emit: (account: string, type: string, object: JsonObject, request: EventRequest) => void
  readonly eventFault: (fault: EventFault) => void
  readonly hold: () => void
  readonly release: (order?: "as-created" | "reversed") => Promise<void>
  readonly settled: () => Promise<void>
  readonly resend: (eventId: string) => Promise<void>
}

export const makeEvents = (options: {
  readonly clock: Clock
  readonly accounts: Accounts
  readonly endpoints: WebhookEndpoints
  /** The API version stamped on events when the endpoint named none. */
  readonly apiVersion: string | null
}): Events => {
  const { clock, accounts, endpoints, apiVersion } = options
  const events: Array<JsonObject> = []
  const deliveries: Array<Delivery> = []
  const eventFaults: Array<EventFault & { remaining: number }> = []
  const held: Array<{ readonly event: JsonObject; readonly account: string }> = []
  const eventAccounts = new Map<string, string>()
  const inFlight = new Set<Promise<void>>()
  let holding = false

  const sendTo = async (endpoint: Endpoint, event: JsonObject): Promise<void> => {
    const url = String(endpoint.object.url)
    const payload = JSON.stringify({ ...event, api_version: endpoint.object.api_version ?? event.api_version }, null, 2)
    let status: number | string
    try {
      // Stripe posts JSON and waits a bounded time for a 2xx (https://docs.stripe.com/webhooks#acknowledge-events-immediately).
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          "stripe-signature": sign(payload, endpoint.secret, clock.now)
        },
        body: payload,
        signal: AbortSignal.timeout(10_000)
      })
      await response.arrayBuffer()
      status = response.status
    } catch (error) {
      status = error instanceof Error ? error.message : String(error)
    }
    deliveries.push({
      eventId: String(event.id),
      type: String(event.type),
      endpointId: String(endpoint.object.id),
      url,
      status
    })
  }

  const track = (work: Promise<void>) => {
    inFlight.add(work)
    void work.finally(() => inFlight.delete(work))
  }

  /** Sends to every enabled endpoint of the account subscribed to the type (https://docs.stripe.com/api/webhook_endpoints/create#create_webhook_endpoint-enabled_events). */
  const dispatch = (event: JsonObject, account: string, fault: EventFault | undefined) => {
    const targets = endpoints.subscribed(account, String(event.type))
    const copies = 1 + (fault?.duplicates ?? 0)
    const send = async () => {
      for (const endpoint of targets) for (let copy = 0; copy < copies; copy++) await sendTo(endpoint, event)
    }
    if (fault?.delayMs !== undefined) {
      const delay = fault.delayMs
      track(new Promise<void>((resolve) => setTimeout(resolve, delay)).then(send))
    } else track(send())
  }

  return {
    events,
    deliveries,
    /**
     * Creates an event with a snapshot of the object now (https://docs.stripe.com/api/events/object) and sends it
     * after the API answer, as Stripe does: delivery is asynchronous and "Stripe doesn't guarantee delivery of events
     * in the order in which they're generated" (https://docs.stripe.com/webhooks#event-ordering).
     */
    emit: (account, type, object, request) => {
      const event: JsonObject = {
        ...fixture("event"),
        id: randomId("evt"),
        api_version: apiVersion,
        created: clock.now,
        data: { object: clone(object) },
        livemode: accounts.get(account)?.livemode ?? false,
        pending_webhooks: 1,
        request: { id: request.id, idempotency_key: request.key },
        type
      }
      events.push(event)
      eventAccounts.set(String(event.id), account)
      const ruleIndex = eventFaults.findIndex((rule) => rule.type === undefined || rule.type === type)
      const rule = ruleIndex === -1 ? undefined : eventFaults[ruleIndex]
      if (rule !== undefined) {
        rule.remaining -= 1
        if (rule.remaining <= 0) eventFaults.splice(ruleIndex, 1)
        if (rule.drop === true) return
      }
      if (holding) held.push({ event, account })
      else setImmediate(() => dispatch(event, account, rule))
    },
    eventFault: (fault) => {
      eventFaults.push({ ...fault, remaining: fault.count ?? 1 })
    },
    hold: () => {
      holding = true
    },
    release: async (order = "as-created") => {
      holding = false
      const batch = held.splice(0, held.length)
      if (order === "reversed") batch.reverse()
      for (const { event, account } of batch) {
        dispatch(event, account, undefined)
        // One at a time, so the endpoint sees them in exactly this order.
        await Promise.all([...inFlight])
      }
    },
    settled: async () => {
      await new Promise((resolve) => setImmediate(resolve))
      while (inFlight.size > 0) {
        await Promise.all([...inFlight])
        await new Promise((resolve) => setImmediate(resolve))
      }
    },
    resend: async (eventId) => {
      const event = events.find((candidate) => candidate.id === eventId)
      const account = eventAccounts.get(eventId)
      if (event === undefined || account === undefined) throw new Error(`no event ${eventId}`)
      dispatch(event, account, undefined)
      await Promise.all([...inFlight])
    }
  }
}
