/**
 * The operator API (`/admin/api/v1`, decisions §8) over `fetch`, with the admin token as bearer. Error answers
 * (`{"error":{"code","message",…}}`) and unreachable servers become `CommandFailure`s with code, fields and Request-Id.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { type CommandFailure, failure } from "./Output.ts"

export interface OperatorSettings {
  readonly adminToken: Redacted.Redacted<string>
  readonly baseUrl: string
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Why fetch failed: its cause (ECONNREFUSED …) rather than "fetch failed". */
const reason = (error: unknown): string =>
  error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)

/** Sends one request; answers the parsed JSON body of a 2xx. */
export const request = <A>(
  settings: OperatorSettings,
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  path: string,
  body?: unknown
): Effect.Effect<A, CommandFailure> =>
  Effect.tryPromise({
    try: async (signal) => {
      const url = `${settings.baseUrl.replace(/\/+$/, "")}/admin/api/v1${path}`
      const headers: Record<string, string> = {
        accept: "application/json",
        authorization: `Bearer ${Redacted.value(settings.adminToken)}`
      }
      if (body !== undefined) headers["content-type"] = "application/json"
      const response = await fetch(url, {
        method,
        headers,
        signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      let parsed: unknown
      try {
        parsed = text.length > 0 ? JSON.parse(text) : undefined
      } catch {
        parsed = undefined
      }
      return { response, text, parsed }
    },
    catch: (error) =>
      failure(`Could not reach the operator API at ${settings.baseUrl}: ${reason(error)}`, {
        code: "connection_error"
      })
  }).pipe(
    Effect.flatMap(({ response, text, parsed }) => {
      const requestId = response.headers.get("request-id")
      if (response.ok) return Effect.succeed(parsed as A)
      if (isRecord(parsed) && isRecord(parsed.error)) {
        const { message, code, ...rest } = parsed.error
        return Effect.fail(
          failure(typeof message === "string" ? message : `HTTP ${response.status}`, {
            code,
            status: response.status,
            ...rest,
            request_id: requestId
          })
        )
      }
      return Effect.fail(
        failure(`Unexpected answer from the operator API: HTTP ${response.status}`, {
          code: "unexpected_response",
          status: response.status,
          body: text.slice(0, 200),
          request_id: requestId
        })
      )
    })
  )
