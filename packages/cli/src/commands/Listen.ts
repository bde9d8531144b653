/**
 * `kassa listen --forward-to URL`: receive the application's events on a machine no webhook can reach (behind NAT, a
 * laptop), like `stripe listen`. It follows the merchant events API with the application's key — nothing to set up
 * on the server — and posts each event created after it started to the URL, signed as a webhook is, with a secret
 * made for the session and printed at the start.
 */
import { type KassaEvent, kassaEventNames, sign, signatureHeaderName, userAgent } from "@kassa/webhook-verify"
import * as Console from "effect/Console"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as EventFollower from "../EventFollower.ts"
import { call, type MerchantSettings } from "../Merchant.ts"
import { type CommandFailure, reporting } from "../Output.ts"
import * as Settings from "../Settings.ts"

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** `whsec_` and 32 random base62 characters, the form of an application's webhook secret. */
export const sessionSecret = (): string => {
  let text = ""
  while (text.length < 32) {
    for (const byte of crypto.getRandomValues(new Uint8Array(48))) {
      // 248 = 4 × 62: bytes above it would make the first characters likelier.
      if (byte < 248 && text.length < 32) text += base62[byte % 62]
    }
  }
  return `whsec_${text}`
}

export interface Forwarded {
  readonly url: string
  /** The receiver's HTTP status; null when it could not be reached or did not answer in time. */
  readonly status: number | null
  readonly ms: number
  readonly error?: string
}

/** Posts the event as a webhook delivery would: its JSON, signed, with the event header; never rejects. */
export const forwardEvent = async (
  url: string,
  event: KassaEvent,
  secret: string,
  timeoutMs: number
): Promise<Forwarded> => {
  const body = JSON.stringify(event)
  const started = performance.now()
  const ms = () => Math.round(performance.now() - started)
  try {
    const answer = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": userAgent,
        [signatureHeaderName]: await sign(body, secret),
        "X-Service-Event": event.event
      },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs)
    })
    // The body is read (and dropped) within the same deadline, so the connection is freed.
    await answer.arrayBuffer()
    return { url, status: answer.status, ms: ms() }
  } catch (error) {
    const message =
      error instanceof Error && error.name === "TimeoutError"
        ? `no answer within ${timeoutMs} ms`
        : error instanceof Error
          ? error.cause instanceof Error
            ? error.cause.message
            : error.message
          : String(error)
    return { url, status: null, ms: ms(), error: message }
  }
}

export const describeForward = (event: KassaEvent, forwarded: Forwarded, at: Date): string => {
  const answer = forwarded.status === null ? `failed (${forwarded.error ?? "?"})` : `HTTP ${forwarded.status}`
  return (
    `${at.toISOString()}  ${event.event}  ${event.id}  payment ${event.data.id} (${event.data.status})` +
    `  -> ${forwarded.url}: ${answer} in ${forwarded.ms} ms`
  )
}

interface Poll {
  readonly settings: MerchantSettings
  readonly timeoutMs: number
}

// One attempt per request, bounded: the next poll is the retry.
const page = (
  poll: Poll,
  params: { readonly startingAfter?: string; readonly from?: string; readonly limit: number }
) =>
  call(poll.settings, (kassa) =>
    kassa.events.listPage(
      {
        limit: params.limit,
        ...(params.startingAfter === undefined ? {} : { starting_after: params.startingAfter }),
        ...(params.from === undefined ? {} : { created_gte: params.from })
      },
      { timeout: poll.timeoutMs, maxRetries: 0 }
    )
  )

/** Every event created at or after `from` (all of them without it), newest first, page by page. */
export const eventsSince = (poll: Poll, from: string | undefined) =>
  Effect.gen(function* () {
    const listed: Array<KassaEvent> = []
    let startingAfter: string | undefined
    while (true) {
      const { data, has_more } = yield* page(poll, {
        limit: 100,
        ...(from === undefined ? {} : { from }),
        ...(startingAfter === undefined ? {} : { startingAfter })
      })
      listed.push(...data)
      const last = data[data.length - 1]
      if (!has_more || last === undefined) return listed
      startingAfter = last.id
    }
  })

/** The session's start: the events of the window before the newest one exist already and are never forwarded. */
const startFollowing = (poll: Poll) =>
  Effect.gen(function* () {
    const newest = (yield* page(poll, { limit: 1 })).data[0]
    if (newest === undefined) return { state: EventFollower.start([]), after: null }
    const state = EventFollower.start(yield* eventsSince(poll, EventFollower.readFrom(EventFollower.start([newest]))))
    return { state, after: newest.id }
  })

// A comma-separated list of event names; a name Kassa never sends is a usage error, not a filter that matches nothing.
const eventList = Schema.String.check(
  Schema.isPattern(
    new RegExp(`^(${kassaEventNames.join("|")})(,(${kassaEventNames.join("|")}))*$`.replace(/\./g, "\\.")),
    {
      message: `Expected event names separated by commas: ${kassaEventNames.join(", ")}`
    }
  )
)

const httpUrl = Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/, { message: "Expected an http(s) URL" }))

export const listen = Command.make(
  "listen",
  {
    ...Settings.merchant,
    forwardTo: Flag.String("forward-to").pipe(
      Flag.withDescription("Post each new event here, signed with the session's secret"),
      Flag.withSchema(httpUrl)
    ),
    pollInterval: Flag.Int("poll-interval").pipe(
      Flag.withDescription("Milliseconds between two looks at the events API (default 1000)"),
      Flag.withDefault(1000)
    ),
    events: Flag.String("events").pipe(
      Flag.withDescription(
        "Forward only these events, comma-separated (e.g. payment.paid,payment.failed); default all"
      ),
      Flag.withSchema(eventList),
      Flag.optional
    ),
    timeout: Flag.Int("timeout").pipe(
      Flag.withDescription("Milliseconds each poll and each forward may take (default 10000)"),
      Flag.withDefault(10_000)
    )
  },
  (input) =>
    Effect.gen(function* () {
      const poll: Poll = { settings: input, timeoutMs: Math.max(1, input.timeout) }
      const secret = sessionSecret()
      const only = Option.map(input.events, (names) => names.split(","))
      const wanted = (event: KassaEvent) => Option.isNone(only) || only.value.includes(event.event)
      // Where the session starts: only events that appear after it are forwarded.
      const started = yield* startFollowing(poll)
      let state = started.state
      yield* input.json
        ? Console.log(JSON.stringify({ forward_to: input.forwardTo, secret, after: started.after }))
        : Console.log(
            `Ready: forwarding new events to ${input.forwardTo} (polling ${input.baseUrl} every ` +
              `${input.pollInterval} ms). Ctrl-C stops.\nSession secret (verify the forwarded requests with it): ${secret}`
          )
      while (true) {
        yield* Effect.sleep(Math.max(50, input.pollInterval))
        const listed = yield* eventsSince(poll, EventFollower.readFrom(state)).pipe(
          Effect.map(Option.some),
          // A failed poll is shown and retried at the next interval; the session goes on.
          Effect.catch((failure: CommandFailure) =>
            Effect.as(
              input.json
                ? Console.log(JSON.stringify({ poll_failed: failure.message, ...failure.details }))
                : Console.error(`${new Date().toISOString()}  poll failed: ${failure.message}`),
              Option.none<ReadonlyArray<KassaEvent>>()
            )
          )
        )
        if (Option.isNone(listed)) continue
        const next = EventFollower.step(state, listed.value)
        for (const event of next.fresh) {
          if (!wanted(event)) continue
          const forwarded = yield* Effect.promise(() => forwardEvent(input.forwardTo, event, secret, poll.timeoutMs))
          yield* input.json
            ? Console.log(JSON.stringify({ id: event.id, event: event.event, payment_id: event.data.id, forwarded }))
            : Console.log(describeForward(event, forwarded, new Date()))
        }
        state = next.state
      }
    }).pipe(reporting(input.json))
).pipe(
  Command.withDescription(
    "Forward the application's new events to a local URL, signed with a secret made for the session (no webhook URL " +
      "to set; KASSA_API_KEY)"
  )
)
