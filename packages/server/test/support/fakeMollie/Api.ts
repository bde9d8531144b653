/**
 * The API over HTTP: authenticates the key, records the request (body and query, so tests can prove what Kassa never
 * sends), applies the injected fault, runs the route, pages lists and keeps POST answers under their Idempotency-Key.
 * Sources: research mollie.md §5–8.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Fault, Faults } from "../fakeStripe/Faults.ts"
import type { Payments } from "./Payments.ts"
import type { Profile, Profiles } from "./Profiles.ts"
import type { Refunds } from "./Refunds.ts"
import { documentation, type Json, type JsonObject, link, MollieFailure, unprocessable } from "./Shapes.ts"

/** The endpoints the fake serves, by name (tests count calls by these). */
export type Endpoint =
  | "profiles.me"
  | "payments.create"
  | "payments.list"
  | "payments.get"
  | "payments.cancel"
  | "refunds.create"
  | "refunds.list"
  | "refunds.get"
  | "refunds.all"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly endpoint: Endpoint | null
  readonly query: Readonly<Record<string, string>>
  /** The JSON body, or null when there was none. */
  readonly body: Json
  readonly idempotencyKey: string | null
  readonly traceparent: string | null
  status: number | "no answer"
  replayed: boolean
}

interface SavedAnswer {
  readonly path: string
  readonly body: string
  readonly status: number
  readonly payload: string
  readonly atMs: number
}

interface Route {
  readonly method: string
  readonly path: RegExp
  readonly endpoint: Endpoint
  readonly run: (
    profile: Profile,
    match: ReadonlyArray<string | undefined>,
    body: JsonObject,
    query: URLSearchParams
  ) => Json
}

/** Sorted keys, so the same parameters in another order are the same request (mollie.md §6). */
const canonical = (value: Json): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : typeof value === "object" && value !== null
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonical((value as JsonObject)[key] ?? null)}`)
          .join(",")}}`
      : JSON.stringify(value)

export interface Api {
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly handle: (request: IncomingMessage, response: ServerResponse, body: string) => void
  readonly dropHanging: () => void
}

export const makeApi = (options: {
  readonly base: string
  readonly now: () => number
  readonly profiles: Profiles
  readonly payments: Payments
  readonly refunds: Refunds
  readonly faults: Faults
}): Api => {
  const { base, profiles, payments, refunds, faults } = options
  const requests: Array<RecordedRequest> = []
  const saved = new Map<string, SavedAnswer>()
  const hanging = new Set<ServerResponse>()

  /** A list page: `from` (an id, inclusive), `limit` (1–250, default 50), newest first; `_links.next` names the next `from`. */
  const page = (
    path: string,
    name: "payments" | "refunds",
    items: ReadonlyArray<{ readonly id: string; readonly object: JsonObject }>,
    query: URLSearchParams
  ): JsonObject => {
    const limit = query.get("limit") === null ? 50 : Number(query.get("limit"))
    if (!Number.isInteger(limit) || limit < 1 || limit > 250) throw unprocessable("The limit is invalid.", "limit")
    const ordered = query.get("sort") === "asc" ? [...items].reverse() : items
    const from = query.get("from")
    const start = from === null ? 0 : ordered.findIndex((item) => item.id === from)
    if (start === -1) throw new MollieFailure(400, "Bad Request", "The 'from' parameter is invalid.", "from")
    const slice = ordered.slice(start, start + limit)
    const next = ordered[start + limit]
    const href = (cursor: string) => {
      const params = new URLSearchParams({ from: cursor, limit: String(limit) })
      const sort = query.get("sort")
      if (sort !== null) params.set("sort", sort)
      return `${base}${path}?${params}`
    }
    return {
      count: slice.length,
      _embedded: { [name]: slice.map((item) => item.object) },
      _links: {
        self: link(`${base}${path}?${query}`),
        previous: null,
        next: next === undefined ? null : link(href(next.id)),
        documentation: documentation(`list-${name}`)
      }
    }
  }

  const routes: ReadonlyArray<Route> = [
    { method: "GET", path: /^\/v2\/profiles\/me$/, endpoint: "profiles.me", run: (profile) => profile.object },
    {
      method: "POST",
      path: /^\/v2\/payments$/,
      endpoint: "payments.create",
      run: (profile, _, body) => payments.create(profile, body).object
    },
    {
      method: "GET",
      path: /^\/v2\/payments$/,
      endpoint: "payments.list",
      run: (profile, _, __, query) => page("/v2/payments", "payments", payments.list(profile), query)
    },
    {
      method: "GET",
      path: /^\/v2\/payments\/([^/]+)$/,
      endpoint: "payments.get",
      run: (profile, match) => payments.get(profile, match[1] ?? "").object
    },
    {
      method: "DELETE",
      path: /^\/v2\/payments\/([^/]+)$/,
      endpoint: "payments.cancel",
      run: (profile, match) => payments.cancel(profile, match[1] ?? "").object
    },
    {
      method: "POST",
      path: /^\/v2\/payments\/([^/]+)\/refunds$/,
      endpoint: "refunds.create",
      run: (profile, match, body) => refunds.create(profile, match[1] ?? "", body).object
    },
    {
      method: "GET",
      path: /^\/v2\/payments\/([^/]+)\/refunds$/,
      endpoint: "refunds.list",
      run: (profile, match, _, query) =>
        page(`/v2/payments/${match[1]}/refunds`, "refunds", refunds.ofPayment(profile, match[1] ?? ""), query)
    },
    {
      method: "GET",
      path: /^\/v2\/payments\/([^/]+)\/refunds\/([^/]+)$/,
      endpoint: "refunds.get",
      run: (profile, match) => refunds.get(profile, match[1] ?? "", match[2] ?? "").object
    },
    {
      method: "GET",
      path: /^\/v2\/refunds$/,
      endpoint: "refunds.all",
      run: (profile, _, __, query) => page("/v2/refunds", "refunds", refunds.ofProfile(profile), query)
    }
  ]

  const handle = (request: IncomingMessage, response: ServerResponse, raw: string) => {
    const url = new URL(request.url ?? "/", base)
    const method = request.method ?? "GET"
    const header = (name: string) => (typeof request.headers[name] === "string" ? String(request.headers[name]) : null)
    const key = header("idempotency-key")
    const route = routes.find((candidate) => candidate.method === method && candidate.path.test(url.pathname))
    let body: Json = null
    try {
      body = raw === "" ? null : (JSON.parse(raw) as Json)
    } catch {
      body = raw
    }
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      endpoint: route?.endpoint ?? null,
      query: Object.fromEntries(url.searchParams),
      body,
      idempotencyKey: key,
      traceparent: header("traceparent"),
      status: "no answer",
      replayed: false
    }
    requests.push(record)
    const send = (status: number, payload: string, extra: Record<string, string> = {}) => {
      record.status = status
      response.writeHead(status, { "content-type": "application/hal+json", ...extra })
      response.end(payload)
    }
    const fail = (failure: MollieFailure) => send(failure.status, JSON.stringify(failure.body()))
    const hang = () => {
      hanging.add(response)
      response.on("close", () => hanging.delete(response))
    }
    try {
      const profile = profiles.authenticate(request.headers.authorization)
      const fault: Fault | undefined = faults.take(method, url.pathname)
      if (fault?.kind === "hang") return hang()
      if (fault?.kind === "closed") return void request.socket.resetAndDestroy()
      if (fault?.kind === "status") {
        const title =
          fault.status === 429 ? "Too Many Requests" : fault.status >= 500 ? "Internal Server Error" : "Bad Request"
        return fail(new MollieFailure(fault.status, title, `Injected by the fake (${fault.status}).`))
      }
      if (route === undefined) throw new MollieFailure(404, "Not Found", `Unknown endpoint ${method} ${url.pathname}.`)
      // With an API key the key fixes mode and profile: `testmode` or `profileId` anywhere is a 422 (mollie.md §7).
      for (const field of ["testmode", "profileId"]) {
        if (url.searchParams.has(field))
          throw unprocessable(`Non-existent query parameter "${field}" for this API call.`, field)
      }
      if (method === "POST" && (typeof body !== "object" || body === null || Array.isArray(body))) {
        throw new MollieFailure(400, "Bad Request", "The request body is not valid JSON.")
      }
      const params = (typeof body === "object" && body !== null && !Array.isArray(body) ? body : {}) as JsonObject
      // Idempotency (mollie.md §6): POSTs only; a repeat within an hour replays the answer with
      // `Idempotent-Replayed: true`, the same key on another endpoint or with other parameters is a 400.
      const slot = key === null || key === "" || method !== "POST" ? null : `${profile.id} ${key}`
      const fingerprint = canonical(params)
      const previous = slot === null ? undefined : saved.get(slot)
      if (previous !== undefined && options.now() - previous.atMs < 3_600_000) {
        if (previous.path !== url.pathname || previous.body !== fingerprint) {
          throw new MollieFailure(400, "Bad Request", "The idempotency key was used before with other parameters.")
        }
        record.replayed = true
        if (fault?.kind === "hang-after") return hang()
        return send(previous.status, previous.payload, { "idempotent-replayed": "true" })
      }
      let status = method === "POST" ? 201 : 200
      let payload: string
      try {
        payload = JSON.stringify(route.run(profile, url.pathname.match(route.path) ?? [], params, url.searchParams))
      } catch (error) {
        if (!(error instanceof MollieFailure) || !error.executed) throw error
        status = error.status
        payload = JSON.stringify(error.body())
      }
      if (slot !== null)
        saved.set(slot, { path: url.pathname, body: fingerprint, status, payload, atMs: options.now() })
      if (fault?.kind === "hang-after") return hang()
      if (fault?.kind === "status-after")
        return fail(new MollieFailure(fault.status, "Internal Server Error", "Lost answer (injected by the fake)."))
      if (fault?.kind === "delay-after") {
        const answer = payload
        return void setTimeout(() => send(status, answer), fault.ms)
      }
      return send(status, payload)
    } catch (error) {
      if (error instanceof MollieFailure) return fail(error)
      return fail(
        new MollieFailure(500, "Internal Server Error", error instanceof Error ? error.message : String(error))
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
