/**
 * What the Stripe connector makes of events: Stripe's signature (a bad one refused, 300 s tolerance); a body signed
 * with the link's secret but not shaped like a Stripe event (issue 21 §10) refused too (`EventRejected`, answered
 * 400), never a defect (500), whatever the shape; and Stripe's dispute events naming the disputed payment
 * (`ProviderPaymentChanged`), as the fake sends them.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import type { EventRejected, LinkAccess } from "../src/providers/ProviderConnector.ts"
import { subscribedEvents } from "../src/providers/StripeConnector.ts"
import { connector, useStripeConnector } from "./support/StripeConnectorHarness.ts"

const harness = useStripeConnector()
const { run, failureOf } = harness

const parse = (link: LinkAccess, body: string) =>
  Effect.flatMap(connector, (c) => c.parseEvent(link, body, { "Stripe-Signature": harness.sign(body) }))

const sessionEvent = (object: unknown = { id: "cs_test_1", object: "checkout.session" }) => ({
  id: "evt_1",
  object: "event",
  type: "checkout.session.completed",
  livemode: false,
  data: { object }
})

/** Signed bodies that are no Stripe event: each is refused, with a message, and nothing dies. */
const malformed: ReadonlyArray<readonly [string, string]> = [
  ["an array as the body", "[]"],
  ["null as the body", "null"],
  ["a string as the body", JSON.stringify("evt_1")],
  ["a number as the body", "42"],
  ["an empty object", "{}"],
  ["no data", JSON.stringify({ ...sessionEvent(), data: undefined })],
  ["data: null", JSON.stringify({ ...sessionEvent(), data: null })],
  ["data: []", JSON.stringify({ ...sessionEvent(), data: [] })],
  ["data without object", JSON.stringify({ ...sessionEvent(), data: {} })],
  ["data.object: null", JSON.stringify(sessionEvent(null))],
  ["data.object a string", JSON.stringify(sessionEvent("cs_test_1"))],
  ["data.object an array", JSON.stringify(sessionEvent(["cs_test_1"]))],
  ["a numeric event id", JSON.stringify({ ...sessionEvent(), id: 1 })],
  ["no event id", JSON.stringify({ ...sessionEvent(), id: undefined })],
  ["an empty event id", JSON.stringify({ ...sessionEvent(), id: "" })],
  ["a NUL in the event id", JSON.stringify({ ...sessionEvent(), id: "evt_\u0000x" })],
  ["an event id of 10,000 characters", JSON.stringify({ ...sessionEvent(), id: `evt_${"x".repeat(10_000)}` })],
  ["a numeric type", JSON.stringify({ ...sessionEvent(), type: 5 })],
  ["no type", JSON.stringify({ ...sessionEvent(), type: undefined })],
  ["livemode as a string", JSON.stringify({ ...sessionEvent(), livemode: "false" })],
  ["a numeric session id", JSON.stringify(sessionEvent({ id: 12345 }))],
  ["a session without id", JSON.stringify(sessionEvent({ object: "checkout.session" }))],
  ["a NUL in the session id", JSON.stringify(sessionEvent({ id: "cs_test_\u0000" }))],
  ["a session id of 300 characters", JSON.stringify(sessionEvent({ id: `cs_test_${"a".repeat(292)}` }))],
  ["a line break in the session id", JSON.stringify(sessionEvent({ id: "cs_test_1\nSet-Cookie: x" }))],
  ["a numeric client_reference_id", JSON.stringify(sessionEvent({ id: "cs_test_1", client_reference_id: 7 }))],
  [
    "a refund without id",
    JSON.stringify({ ...sessionEvent(), type: "refund.updated", data: { object: { object: "refund" } } })
  ],
  [
    "a numeric payment_intent on charge.refunded",
    JSON.stringify({ ...sessionEvent(), type: "charge.refunded", data: { object: { id: "ch_1", payment_intent: 7 } } })
  ],
  [
    "a dispute without payment_intent",
    JSON.stringify({ ...sessionEvent(), type: "charge.dispute.created", data: { object: { id: "du_1" } } })
  ],
  [
    "a dispute whose payment_intent is a list",
    JSON.stringify({
      ...sessionEvent(),
      type: "charge.dispute.closed",
      data: { object: { id: "du_1", payment_intent: ["pi_1"] } }
    })
  ]
]

describe("Stripe's signature, 300 s tolerance", () => {
  const parseSigned = (link: LinkAccess, body: string, signature: string | undefined) =>
    Effect.flatMap(connector, (c) =>
      c.parseEvent(link, body, signature === undefined ? {} : { "Stripe-Signature": signature })
    )

  it("an event the fake sends verifies and names its session; a refund event names its refund", async () => {
    const fake = harness.fake()
    const receiver = harness.receiver()
    const link = harness.link()
    await harness.register(link)
    const { checkoutId: sessionId } = await harness.open(link)
    fake.pay(sessionId)
    await fake.settled()
    const [delivered] = await receiver.waitFor(1, `/stripe/${link.id}`)
    if (delivered === undefined) throw new Error("no event")
    const event = await run(parseSigned(link, delivered.body, String(delivered.headers["stripe-signature"])))
    expect(event).toMatchObject({
      type: "checkout.session.completed",
      livemode: false,
      subject: { _tag: "Checkout", checkoutId: sessionId, paymentId: expect.any(String) }
    })

    const intent = String(fake.session(sessionId).payment_intent)
    const refund = fake.refundInDashboard(intent, 100)
    await fake.settled()
    const all = await receiver.waitFor(3, `/stripe/${link.id}`)
    const subjects = await Promise.all(
      all.slice(1).map((request) => run(parseSigned(link, request.body, String(request.headers["stripe-signature"]))))
    )
    const seen: Array<unknown> = subjects.map((parsed) => parsed.subject)
    const refundId = String(refund.id)
    expect(seen).toContainEqual({ _tag: "Refund", providerRefundId: refundId })
    // The charge carries no refunds list (API 2022-11-15): its refunds are listed by payment intent.
    expect(seen).toContainEqual({ _tag: "RefundsChanged", providerPaymentId: intent })
    const charge = fake.events.find((candidate) => candidate.type === "charge.refunded")
    const chargeData = charge?.data as { readonly object: object } | undefined
    expect(chargeData?.object).toBeDefined()
    expect(Object.keys(chargeData?.object ?? {})).not.toContain("refunds")
    const listed = await run(Effect.flatMap(connector, (c) => c.listRefunds(link, intent)))
    expect(listed).toEqual({ _tag: "Refunds", ids: [refundId] })
  })

  it("a wrong secret, a changed body or a missing header is rejected", async () => {
    const link = harness.link()
    await harness.register(link)
    const body = JSON.stringify({
      id: "evt_1",
      object: "event",
      type: "checkout.session.expired",
      livemode: false,
      data: { object: { id: "cs_1" } }
    })
    const good = harness.sign(body)
    expect((await run(parseSigned(link, body, good))).subject).toEqual({
      _tag: "Checkout",
      checkoutId: "cs_1",
      paymentId: null
    })
    const forged = harness.sign(body, { secret: "whsec_not_the_secret" })
    expect(await failureOf(parseSigned(link, body, forged))).toMatchObject({ _tag: "EventRejected" })
    expect(await failureOf(parseSigned(link, body.replace("cs_1", "cs_2"), good))).toMatchObject({
      _tag: "EventRejected"
    })
    expect(await failureOf(parseSigned(link, body, undefined))).toMatchObject({ _tag: "EventRejected" })
  })

  it("signed 295 s ago verifies; 301 s ago is rejected", async () => {
    const link = harness.link()
    await harness.register(link)
    const body = JSON.stringify({
      id: "evt_2",
      object: "event",
      type: "refund.updated",
      livemode: false,
      data: { object: { id: "re_1" } }
    })
    const now = Math.floor(Date.now() / 1000)
    const at = (age: number) => harness.sign(body, { timestamp: now - age })
    expect((await run(parseSigned(link, body, at(295)))).subject).toEqual({ _tag: "Refund", providerRefundId: "re_1" })
    const rejected = (await failureOf(parseSigned(link, body, at(301)))) as EventRejected
    expect(rejected).toMatchObject({ _tag: "EventRejected" })
    expect(rejected.message).toContain("tolerance")
  })
})

describe("validly signed, malformed events", () => {
  it("the table has the shapes the attack used, and more", () => {
    expect(malformed.length).toBeGreaterThanOrEqual(16)
  })

  it.each(malformed)("%s is refused (EventRejected), never a defect", async (_shape, body) => {
    const link = harness.link()
    await harness.register(link)
    const rejected = (await failureOf(parse(link, body))) as EventRejected
    expect(rejected._tag).toBe("EventRejected")
    expect(rejected.message.length).toBeGreaterThan(0)
    expect(rejected.message.length).toBeLessThan(500)
    expect(rejected.message).not.toContain("\u0000")
  })

  it("a well-formed event of the same shapes still parses; a client_reference_id that is not Kassa's is no payment id", async () => {
    const link = harness.link()
    await harness.register(link)
    const paymentId = randomUUID()
    const ours = JSON.stringify(sessionEvent({ id: "cs_test_1", client_reference_id: paymentId }))
    expect((await run(parse(link, ours))).subject).toEqual({ _tag: "Checkout", checkoutId: "cs_test_1", paymentId })
    const foreign = JSON.stringify(sessionEvent({ id: "cs_test_2", client_reference_id: "order-17" }))
    expect((await run(parse(link, foreign))).subject).toEqual({
      _tag: "Checkout",
      checkoutId: "cs_test_2",
      paymentId: null
    })
    // Types Kassa does not read are `Other`, whatever their object holds, as long as it is an object.
    const other = JSON.stringify({ ...sessionEvent({ anything: [1, 2] }), type: "customer.created" })
    expect(await run(parse(link, other))).toMatchObject({
      id: "evt_1",
      type: "customer.created",
      subject: { _tag: "Other" }
    })
    // A dispute on a charge made without a PaymentIntent cannot be a Checkout payment's.
    const chargeOnly = JSON.stringify({
      ...sessionEvent(),
      type: "charge.dispute.created",
      data: { object: { id: "du_1", payment_intent: null } }
    })
    expect((await run(parse(link, chargeOnly))).subject).toEqual({ _tag: "Other" })
  })
})

describe("disputes", () => {
  it("the endpoint subscribes to the dispute events that move money", () => {
    expect(subscribedEvents).toEqual(
      expect.arrayContaining([
        "charge.dispute.created",
        "charge.dispute.funds_withdrawn",
        "charge.dispute.funds_reinstated",
        "charge.dispute.closed"
      ])
    )
  })

  it("each dispute event Stripe sends names the disputed payment: ProviderPaymentChanged", async () => {
    const fake = harness.fake()
    const link = harness.link()
    await harness.register(link)
    const { checkoutId } = await harness.open(link)
    fake.pay(checkoutId)
    const intent = String(fake.session(checkoutId).payment_intent)
    const dispute = fake.dispute(intent)
    fake.closeDispute(String(dispute.id), "won")
    await fake.settled()
    // completed, then created, funds_withdrawn, funds_reinstated and closed.
    const delivered = await harness.receiver().waitFor(5, `/stripe/${link.id}`)
    const events = await Promise.all(
      delivered.map((request) =>
        run(
          Effect.flatMap(connector, (c) =>
            c.parseEvent(link, request.body, { "Stripe-Signature": String(request.headers["stripe-signature"]) })
          )
        )
      )
    )
    const disputes = events.filter((event) => event.type.startsWith("charge.dispute."))
    expect(disputes.map((event) => event.type).sort()).toEqual([
      "charge.dispute.closed",
      "charge.dispute.created",
      "charge.dispute.funds_reinstated",
      "charge.dispute.funds_withdrawn"
    ])
    for (const event of disputes) {
      expect(event.subject).toEqual({ _tag: "ProviderPaymentChanged", providerPaymentId: intent })
    }
  })
})
