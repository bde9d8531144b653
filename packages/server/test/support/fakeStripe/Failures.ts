/** Errors, as Stripe answers them. */
import type { JsonObject } from "./Json.ts"

/** Stripe's error object (https://docs.stripe.com/api/errors): `{error: {type, message, code?, param?}}`. */
export class StripeFailure {
  readonly status: number
  readonly error: JsonObject
  readonly headers: Record<string, string>
  // Whether the endpoint had begun to run: only then is the answer kept under the Idempotency-Key.
  readonly executed: boolean
  constructor(status: number, error: JsonObject, headers: Record<string, string> = {}, executed = false) {
    this.status = status
    this.error = error
    this.headers = headers
    this.executed = executed
  }
}

export const invalidRequest = (message: string, extra: JsonObject = {}, executed = false) =>
  new StripeFailure(400, { type: "invalid_request_error", message, ...extra }, {}, executed)

export const missing = (param: string) =>
  invalidRequest(`Missing required param: ${param}.`, { code: "parameter_missing", param })

export const noSuch = (object: string, id: string, param: string) =>
  new StripeFailure(404, {
    type: "invalid_request_error",
    code: "resource_missing",
    doc_url: "https://stripe.com/docs/error-codes/resource-missing",
    message: `No such ${object}: '${id}'`,
    param
  })
