/**
 * What the `kassa admin` groups share: one operator call as a command (its request built from flags, its answer
 * printed) and the `<application-id>` argument most of them take.
 */
import * as Argument from "effect/cli/Argument"
import * as Effect from "effect/Effect"
import type { HttpClientResponse } from "effect/http"
import * as Option from "effect/Option"
import { type OperatorSettings as Connection, call, type Endpoint, type OperatorClient } from "../../Operator.ts"
import { output, reporting } from "../../Output.ts"

/** What one endpoint's call takes, for requests built from flags (the server judges their values). */
export type Request<G extends keyof OperatorClient, E extends keyof OperatorClient[G]> = OperatorClient[G][E] extends (
  request: infer R
) => unknown
  ? R
  : never

/** `{ key: value }` when the option holds a value, `{}` otherwise (for exact optional properties). */
export const some = <K extends string, A>(key: K, option: Option.Option<A>): { [P in K]?: A } =>
  Option.isSome(option) ? ({ [key]: option.value } as { [P in K]?: A }) : {}

export const applicationId = Argument.String("application-id").pipe(Argument.withDescription("The application's id"))

/** Sends one call and prints its answer: JSON with `--json`, else `render` of it; a failure is reported. */
export const answer = <A>(
  input: Connection & { readonly json: boolean },
  at: Endpoint,
  send: (client: OperatorClient) => Effect.Effect<HttpClientResponse.HttpClientResponse, unknown>,
  render: (value: A) => string
) =>
  call<A>(input, at, send).pipe(
    Effect.flatMap((value) => output(input.json, value, render)),
    reporting(input.json)
  )
