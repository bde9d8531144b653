/**
 * A kept-alive connection the provider closed under a call, for both connectors against their fakes over real HTTP: the fakes' `closed` fault resets the connection before running the
 * request, as a client meets a connection the server had closed while idle. The call is sent once more on a new
 * connection (a create under the same Idempotency-Key), and only once; a request that is not safe to repeat is not
 * sent again. Mollie's calls go through Kassa's transport (mollie/MollieTransport.ts says why and how); Stripe's SDK
 * does this itself, held here so that an upgrade that stopped would be seen. Before Kassa's transport did, the reset
 * was "no answer" and a live Mollie create failed its payment (the end-to-end test met it on a busy machine: the
 * fake's server closes idle connections, as Node's does).
 */
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { nodeFetcher } from "../src/providers/mollie/MollieTransport.ts"
import * as Mollie from "./support/MollieConnectorSupport.ts"
import { connector as stripeConnector, useStripeConnector } from "./support/StripeConnectorHarness.ts"

describe("Mollie", () => {
  Mollie.useMollieConnector()
  /** The key checked first, so the create goes out on the connection that check kept alive. */
  const openAfterCheck = (request = Mollie.openRequest()) =>
    Mollie.run(
      Effect.flatMap(Mollie.connector, (c) =>
        Effect.andThen(
          c.verifyLink(Redacted.make(Mollie.fake.apiKey)),
          c.open(Mollie.linkFor(Mollie.fake.apiKey), request)
        )
      )
    )
  const creates = () => Mollie.fake.requests.filter((request) => request.endpoint === "payments.create")

  it("a create on a connection Mollie had closed is sent once more on a new one, under the same key", async () => {
    const request = Mollie.openRequest()
    Mollie.fake.inject({ method: "POST", path: "/v2/payments" }, { kind: "closed" })
    expect(await openAfterCheck(request)).toMatchObject({ _tag: "Opened" })
    expect(creates().map((sent) => sent.idempotencyKey)).toEqual([request.idempotencyKey, request.idempotencyKey])
  })

  it("only once: closed again, it is no answer after two sends; a new connection's reset is not sent again", async () => {
    Mollie.fake.inject({ method: "POST", path: "/v2/payments" }, { kind: "closed" }, 2)
    expect(await openAfterCheck()).toEqual({ _tag: "NoAnswer", reason: "unavailable" })
    expect(creates()).toHaveLength(2)
    // The first call of a new connector goes out on a new connection: a reset there is not an idle close.
    Mollie.fake.inject({ method: "POST", path: "/v2/payments" }, { kind: "closed" })
    expect(
      await Mollie.run(
        Effect.flatMap(Mollie.connector, (c) => c.open(Mollie.linkFor(Mollie.fake.apiKey), Mollie.openRequest()))
      )
    ).toEqual({
      _tag: "NoAnswer",
      reason: "unavailable"
    })
    expect(creates()).toHaveLength(3)
  })

  it("the transport sends a POST with no Idempotency-Key only once", async () => {
    const transport = nodeFetcher()
    try {
      const headers = { authorization: `Bearer ${Mollie.fake.apiKey}`, "content-type": "application/json" }
      expect((await transport.fetcher(`${Mollie.fake.url}/v2/profiles/me`, { headers })).status).toBe(200)
      Mollie.fake.inject({ method: "POST", path: "/v2/payments" }, { kind: "closed" }, 2)
      const body = JSON.stringify(Mollie.openRequest())
      await expect(
        transport.fetcher(`${Mollie.fake.url}/v2/payments`, { method: "POST", headers, body })
      ).rejects.toMatchObject({ code: "ECONNRESET" })
      expect(creates()).toHaveLength(1)
    } finally {
      transport.close()
    }
  })
})

describe("Stripe", () => {
  const harness = useStripeConnector()
  const sessionCreates = () =>
    harness.fake().requests.filter((request) => request.method === "POST" && request.path === "/v1/checkout/sessions")

  it("the SDK sends a create on a closed connection once more, under the same key; only once", async () => {
    const request = harness.openRequest()
    harness.fake().inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "closed" })
    expect(await harness.open(harness.link(), request)).toMatchObject({ _tag: "Opened" })
    expect(sessionCreates().map((sent) => sent.idempotencyKey)).toEqual([
      request.idempotencyKey,
      request.idempotencyKey
    ])

    harness.fake().inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "closed" }, 2)
    expect(
      await harness.run(Effect.flatMap(stripeConnector, (c) => c.open(harness.link(), harness.openRequest())))
    ).toEqual({
      _tag: "NoAnswer",
      reason: "unavailable"
    })
    expect(sessionCreates()).toHaveLength(4)
  })
})
