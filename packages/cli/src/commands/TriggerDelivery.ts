/**
 * What became of the webhook `kassa trigger` made the server send: its delivery's first attempt, read through the
 * operator API (the merchant API does not show deliveries), so trigger can say whether it reached the webhook URL
 * and exit 1 when it did not.
 */
import type { OperatorSchemas } from "@kassa/core"
import * as Effect from "effect/Effect"
import { call, type OperatorSettings } from "../Operator.ts"
import type { Request } from "./admin/OperatorCall.ts"

export type Delivery = typeof OperatorSchemas.DeliveryView.Encoded
type Applications = typeof OperatorSchemas.ApplicationList.Encoded
type Deliveries = typeof OperatorSchemas.DeliveryList.Encoded

/** The delivery of `event` for the payment once it has an attempt; `undefined` when none came within `waitMs`. */
export const firstAttempt = (settings: OperatorSettings, paymentId: string, event: string, waitMs: number) =>
  Effect.gen(function* () {
    // A key does not say its application; the payment's id is unique, so the application with its delivery is it.
    const { data } = yield* call<Applications>(settings, "operatorApplications.list", (client) =>
      client.operatorApplications.list({ responseMode: "response-only" })
    )
    let candidates = data.map(({ id }) => id)
    const query = { payment_id: paymentId, event, limit: 1 } as Request<"operatorDeliveries", "list">["query"]
    const deadline = Date.now() + waitMs
    while (true) {
      for (const id of candidates) {
        const page = yield* call<Deliveries>(settings, "operatorDeliveries.list", (client) =>
          client.operatorDeliveries.list({ params: { id }, query, responseMode: "response-only" })
        )
        const [delivery] = page.data
        if (delivery === undefined) continue
        if (delivery.attempts.length > 0) return delivery
        candidates = [id]
        break
      }
      if (Date.now() >= deadline) return undefined
      yield* Effect.sleep(200)
    }
  })

/** Whether the first attempt reached the webhook URL and got a 2xx. */
export const delivered = (delivery: Delivery): boolean => {
  const status = delivery.attempts[0]?.response_status
  return status !== undefined && status !== null && status >= 200 && status < 300
}

/** `HTTP 200 from https://…` or `connection_refused (https://…)`: the first attempt's answer. */
export const describeAttempt = (delivery: Delivery): string => {
  const attempt = delivery.attempts[0]
  if (attempt === undefined) return "no attempt"
  const where = attempt.url ?? "no webhook URL"
  return attempt.response_status === null
    ? `${attempt.error ?? "no answer"} (${where}) in ${attempt.duration_ms} ms`
    : `HTTP ${attempt.response_status} from ${where} in ${attempt.duration_ms} ms`
}
