/**
 * `kassa listen --forward-to URL`: receive the application's events on a machine no webhook can reach (behind NAT, a
 * laptop), like `stripe listen`. It follows the merchant events API with the application's key — nothing to set up
 * on the server — and posts each event created after it started to the URL, signed as a webhook is, with a secret
 * made for the session and printed at the start.
 */
import { type KassaEvent, sign, signatureHeaderName, userAgent } from "@kassa/webhook-verify"
import * as Console from "effect/Console"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
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
const page = (poll: Poll, startingAfter: string | undefined) =>
  call(poll.settings, (kassa) =>
    kassa.events.listPage(
      { limit: 100, ...(startingAfter === undefined ? {} : { starting_after: startingAfter }) },
      { timeout: poll.timeoutMs, maxRetries: 0 }
    )
  )

/**
 * The events newer than `cursor`, oldest first: newest-first pages are read until one holds the cursor (or none
 * follows: no cursor yet, or the cursor's event is gone).
 */
export const eventsAfter = (poll: Poll, cursor: string | undefined) =>
  Effect.gen(function* () {
    const newer: Array<KassaEvent> = []
    let startingAfter: string | undefined
    while (true) {
      const { data, has_more } = yield* page(poll, startingAfter)
      const at = cursor === undefined ? -1 : data.findIndex((event) => event.id === cursor)
      newer.push(...(at === -1 ? data : data.slice(0, at)))
      const last = data[data.length - 1]
      if (at !== -1 || !has_more || last === undefined) return newer.reverse()
      startingAfter = last.id
    }
  })

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
    timeout: Flag.Int("timeout").pipe(
      Flag.withDescription("Milliseconds each poll and each forward may take (default 10000)"),
      Flag.withDefault(10_000)
    )
  },
  (input) =>
    Effect.gen(function* () {
      const poll: Poll = { settings: input, timeoutMs: Math.max(1, input.timeout) }
      const secret = sessionSecret()
      // Where the session starts: only events created after this one are forwarded.
      let cursor = (yield* page(poll, undefined)).data[0]?.id
      yield* input.json
        ? Console.log(JSON.stringify({ forward_to: input.forwardTo, secret, after: cursor ?? null }))
        : Console.log(
            `Ready: forwarding new events to ${input.forwardTo} (polling ${input.baseUrl} every ` +
              `${input.pollInterval} ms). Ctrl-C stops.\nSession secret (verify the forwarded requests with it): ${secret}`
          )
      while (true) {
        yield* Effect.sleep(Math.max(50, input.pollInterval))
        const fresh = yield* eventsAfter(poll, cursor).pipe(
          // A failed poll is shown and retried at the next interval; the session goes on.
          Effect.catch((failure: CommandFailure) =>
            Effect.as(
              input.json
                ? Console.log(JSON.stringify({ poll_failed: failure.message, ...failure.details }))
                : Console.error(`${new Date().toISOString()}  poll failed: ${failure.message}`),
              [] as ReadonlyArray<KassaEvent>
            )
          )
        )
        for (const event of fresh) {
          const forwarded = yield* Effect.promise(() => forwardEvent(input.forwardTo, event, secret, poll.timeoutMs))
          yield* input.json
            ? Console.log(JSON.stringify({ id: event.id, event: event.event, payment_id: event.data.id, forwarded }))
            : Console.log(describeForward(event, forwarded, new Date()))
          cursor = event.id
        }
      }
    }).pipe(reporting(input.json))
).pipe(
  Command.withDescription(
    "Forward the application's new events to a local URL, signed with a secret made for the session (no webhook URL " +
      "to set; KASSA_API_KEY)"
  )
)
