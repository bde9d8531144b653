/**
 * The API over HTTP: authenticates the key, records the request, applies the injected fault, runs the route and
 * keeps its answer under the Idempotency-Key as Stripe does.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Accounts } from "./Accounts.ts"
import { StripeFailure } from "./Failures.ts"
import type { Faults } from "./Faults.ts"
import { randomId } from "./Fixtures.ts"
import { canonical, type JsonObject, parseForm } from "./Json.ts"
import type { RouteEntry } from "./Routes.ts"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly params: JsonObject
  readonly idempotencyKey: string | null
  readonly stripeVersion: string | null
  /** The W3C trace context the caller sent (Kassa sends its calling span's), for the tracing test. */
  readonly traceparent: string | null
  status: number | "no answer"
  replayed: boolean
}

interface SavedAnswer {
  readonly method: string
  readonly path: string
  readonly params: string
  readonly status: number
  readonly body: string
}

export interface Api {
  /** Every API request, oldest first. */
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly handle: (request: IncomingMessage, response: ServerResponse, body: string) => void
  /** Drops the connections of requests left unanswered (`hang`, `hang-after`). */
  readonly dropHanging: () => void
}

export const makeApi = (options: {
  readonly base: string
  readonly accounts: Accounts
  readonly faults: Faults
  readonly routes: ReadonlyArray<RouteEntry>
}): Api => {
  const { base, accounts, faults, routes } = options
  const saved = new Map<string, SavedAnswer>()
  const requests: Array<RecordedRequest> = []
  const hanging = new Set<ServerResponse>()

  const respond = (response: ServerResponse, status: number, body: string, headers: Record<string, string>) => {
    response.writeHead(status, { "content-type": "application/json", ...headers })
    response.end(body)
  }

  const handle = (request: IncomingMessage, response: ServerResponse, body: string) => {
    const url = new URL(request.url ?? "/", base)
    const method = request.method ?? "GET"
    const params = method === "GET" || method === "DELETE" ? parseForm(url.search.slice(1)) : parseForm(body)
    const key = typeof request.headers["idempotency-key"] === "string" ? request.headers["idempotency-key"] : null
    const version = typeof request.headers["stripe-version"] === "string" ? request.headers["stripe-version"] : null
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      params,
      idempotencyKey: key,
      stripeVersion: version,
      traceparent: typeof request.headers.traceparent === "string" ? request.headers.traceparent : null,
      status: "no answer",
      replayed: false
    }
    requests.push(record)
    const requestId = randomId("req")
    const headers: Record<string, string> = {
      "request-id": requestId,
      ...(version === null ? {} : { "stripe-version": version }),
      ...(key === null ? {} : { "idempotency-key": key })
    }
    const send = (status: number, payload: string, extra: Record<string, string> = {}) => {
      record.status = status
      respond(response, status, payload, { ...headers, ...extra })
    }
    const fail = (failure: StripeFailure) =>
      send(
        failure.status,
        JSON.stringify({ error: { ...failure.error, request_log_url: null } }, null, 2),
        failure.headers
      )
    const hang = () => {
      hanging.add(response)
      response.on("close", () => hanging.delete(response))
    }
    try {
      const account = accounts.authenticate(request.headers.authorization)
      const fault = faults.take(method, url.pathname)
      if (fault?.kind === "hang") return hang()
      if (fault?.kind === "closed") return void request.socket.resetAndDestroy()
      if (fault?.kind === "status") {
        const type =
          fault.status === 429 ? "rate_limit_error" : fault.status >= 500 ? "api_error" : "invalid_request_error"
        return fail(
          new StripeFailure(
            fault.status,
            {
              type,
              message:
                fault.status === 429
                  ? "Too many requests hit the API too quickly."
                  : "An unknown error occurred (injected by the fake)."
            },
            fault.shouldRetry === undefined ? {} : { "stripe-should-retry": String(fault.shouldRetry) }
          )
        )
      }
      const route = routes.find((candidate) => candidate.method === method && candidate.path.test(url.pathname))
      if (route === undefined) {
        return fail(
          new StripeFailure(404, {
            type: "invalid_request_error",
            message: `Unrecognized request URL (${method}: ${url.pathname}).`
          })
        )
      }
      // https://docs.stripe.com/idempotency: POSTs with a key already used replay the saved status and body; the same
      // key with other parameters is an `idempotency_error`. Keys belong to the account.
      const slot = key === null || method !== "POST" ? null : `${account.id} ${key}`
      const fingerprint = canonical(params)
      const previous = slot === null ? undefined : saved.get(slot)
      if (previous !== undefined) {
        if (previous.method !== method || previous.path !== url.pathname || previous.params !== fingerprint) {
          return fail(
            new StripeFailure(400, {
              type: "idempotency_error",
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`
            })
          )
        }
        record.replayed = true
        if (fault?.kind === "hang-after") return hang()
        return send(previous.status, previous.body, { "idempotent-replayed": "true" })
      }
      let status = 200
      let payload: string
      try {
        payload = JSON.stringify(
          route.run(account, params, url.pathname.match(route.path) ?? [], { id: requestId, key }),
          null,
          2
        )
      } catch (error) {
        if (!(error instanceof StripeFailure)) throw error
        // A request that fails validation is not kept under its key (https://docs.stripe.com/idempotency).
        if (!error.executed) return fail(error)
        status = error.status
        payload = JSON.stringify({ error: { ...error.error, request_log_url: null } }, null, 2)
      }
      if (slot !== null) saved.set(slot, { method, path: url.pathname, params: fingerprint, status, body: payload })
      if (fault?.kind === "hang-after") return hang()
      if (fault?.kind === "delay-after") {
        const answer = payload
        return void setTimeout(() => send(status, answer), fault.ms)
      }
      if (fault?.kind === "status-after") {
        return fail(
          new StripeFailure(fault.status, {
            type: "api_error",
            message: "An unknown error occurred after the request ran (injected by the fake)."
          })
        )
      }
      return send(status, payload)
    } catch (error) {
      if (error instanceof StripeFailure) return fail(error)
      return fail(
        new StripeFailure(500, { type: "api_error", message: error instanceof Error ? error.message : String(error) })
      )
    }
  }

  return {
    requests,
    handle,
    dropHanging: () => {
      for (const response of hanging) response.destroy()
    }
  }
}
