/** `kassa webhooks verify` checks one delivery's signature; `kassa webhooks listen` receives deliveries locally. */
import { readFile } from "node:fs/promises"
import type { AddressInfo } from "node:net"
import * as Console from "effect/Console"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import { makeListener } from "../Listener.ts"
import { type CommandFailure, failure, printJson, ReportedFailure, reporting, usageError } from "../Output.ts"
import * as Settings from "../Settings.ts"
import { check, describeVerdict } from "../Verification.ts"

const tolerance = Flag.Int("tolerance").pipe(
  Flag.withDescription("Seconds the signature's t may be away from now (default 300)"),
  Flag.optional
)

/** `X-Service-Signature: t=…,v1=…` or only its value. */
const headerValue = (header: string) => header.replace(/^\s*x-service-signature\s*:\s*/i, "")

const cannotRead = (path: string) => (error: unknown) =>
  usageError(`Cannot read the body file ${path}: ${error instanceof Error ? error.message : String(error)}`)

// stdin through Stdio, not process.stdin, so an in-process run (the tests) gives its own.
const readBody = (path: string) =>
  path === "-"
    ? Stdio.Stdio.use((stdio) => Stream.runCollect(stdio.stdin)).pipe(
        Effect.map((chunks) => new Uint8Array(Buffer.concat(chunks))),
        Effect.mapError(cannotRead(path))
      )
    : Effect.tryPromise({ try: async () => new Uint8Array(await readFile(path)), catch: cannotRead(path) })

const verifyCommand = Command.make(
  "verify",
  {
    json: Settings.json,
    secret: Settings.webhookSecret,
    header: Flag.String("header").pipe(
      Flag.withDescription("The X-Service-Signature header as received (t=…,v1=…)"),
      Flag.optional
    ),
    bodyFile: Flag.String("body-file").pipe(
      Flag.withDescription("The raw body as received, byte for byte; - reads stdin")
    ),
    tolerance
  },
  (input) =>
    Effect.gen(function* () {
      const body = yield* readBody(input.bodyFile)
      const verdict = yield* Effect.promise(() =>
        check(body, Option.getOrUndefined(Option.map(input.header, headerValue)), Redacted.value(input.secret), {
          toleranceSeconds: Option.getOrUndefined(input.tolerance)
        })
      )
      yield* input.json ? printJson(verdict) : Console.log(describeVerdict(verdict))
      if (!verdict.valid) return yield* Effect.fail(new ReportedFailure({ exitCode: 1 }))
    }).pipe(Effect.catchTag("CommandFailure", (failure) => reporting(input.json)(Effect.fail(failure))))
).pipe(Command.withDescription("Check a delivery's signature; exit 0 when it holds, 1 with the reason when not"))

const listen = Command.make(
  "listen",
  {
    json: Settings.json,
    secret: Settings.webhookSecret,
    port: Flag.Int("port").pipe(
      Flag.withDescription("The port to listen on (default 4242; 0 picks a free one)"),
      Flag.withDefault(4242)
    ),
    host: Flag.String("host").pipe(Flag.withDescription("The address to listen on"), Flag.withDefault("127.0.0.1")),
    forwardTo: Flag.String("forward-to").pipe(
      Flag.withDescription("Pass each request on, untouched, to this URL and relay its answer"),
      Flag.withSchema(
        Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/, { message: "Expected an http(s) URL" }))
      ),
      Flag.optional
    ),
    tolerance
  },
  (input) =>
    Effect.gen(function* () {
      // Deliveries are printed through Console, as everything else the command prints.
      const console = yield* Console.consoleWith(Effect.succeed)
      const server = makeListener({
        secret: Redacted.value(input.secret),
        forwardTo: Option.getOrUndefined(input.forwardTo),
        toleranceSeconds: Option.getOrUndefined(input.tolerance),
        json: input.json,
        print: (line) => console.log(line)
      })
      yield* Effect.acquireRelease(
        Effect.callback<void, CommandFailure>((resume) => {
          server.once("error", (error) =>
            resume(Effect.fail(failure(`Cannot listen on ${input.host}:${input.port}: ${error.message}`)))
          )
          server.listen(input.port, input.host, () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeAllConnections()
          })
      )
      const { port } = server.address() as AddressInfo
      const url = `http://${input.host.includes(":") ? `[${input.host}]` : input.host}:${port}`
      const target = Option.getOrUndefined(input.forwardTo)
      yield* input.json
        ? Console.log(JSON.stringify({ listening: url, forward_to: target ?? null }))
        : Console.log(
            `Listening on ${url} for webhooks${target === undefined ? "" : `, forwarding to ${target}`}. Ctrl-C stops.`
          )
      return yield* Effect.never
    }).pipe(Effect.scoped, reporting(input.json))
).pipe(
  Command.withDescription(
    "Receive webhooks locally: verify and print each delivery, answer 200 or 400 (or forward it with --forward-to)"
  )
)

export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks: verify a delivery's signature, receive deliveries locally"),
  Command.withSubcommands([verifyCommand, listen])
)
