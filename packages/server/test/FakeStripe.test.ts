/**
 * The fake Stripe's contract with the official `stripe` SDK: every request here goes through the SDK exactly as the
 * Kassa adapter will send it (form-encoded, Bearer key, Idempotency-Key, pinned Stripe-Version), and every event is
 * verified with the SDK's own `webhooks.constructEvent`. If the fake drifts from what the SDK sends or expects, a
 * test here fails before any Kassa test can be fooled by it.
 */
import Stripe from "stripe"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { subscribedEvents } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { apiVersion, client, failure, objectOf, payOnPage, sessionParams } from "./support/FakeStripeTestSupport.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

let fake: FakeStripe
let receiver: WebhookReceiver
let stripe: Stripe
let secret: string

// The endpoint subscribes to what Kassa's links subscribe to (decisions §10).
const events = subscribedEvents

beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})
beforeEach(async () => {
  fake = await startFakeStripe({ apiVersion })
  stripe = client(fake)
  receiver.requests.length = 0
  const endpoint = await stripe.webhookEndpoints.create({ url: receiver.url("/stripe"), enabled_events: [...events] })
  secret = endpoint.secret ?? ""
})
afterEach(async () => {
  await fake.settled()
  await fake.close()
})

/** The events that reached the endpoint, each verified with the SDK's own signature check. */
const received = async (count: number): Promise<ReadonlyArray<Stripe.Event>> => {
  await fake.settled()
  const requests = await receiver.waitFor(count, "/stripe")
  return requests.map((request) =>
    stripe.webhooks.constructEvent(request.body, String(request.headers["stripe-signature"]), secret)
  )
}

describe("keys and the account (GET /v1/account)", () => {
  it("answers the key's account", async () => {
    const account = await stripe.accounts.retrieve(null)
    expect(account.id).toBe(fake.accountId)
    expect(account.object).toBe("account")
    expect(fake.requests.at(-1)?.stripeVersion).toBe(apiVersion)
  })

  it("a key Stripe does not know gets 401 (StripeAuthenticationError)", async () => {
    const error = await failure(client(fake, "sk_live_not_a_key_of_this_account").accounts.retrieve(null))
    expect(error.type).toBe("StripeAuthenticationError")
    expect(error.statusCode).toBe(401)
    expect(error.message).toContain("Invalid API Key provided")
  })

  it("objects of one account are not visible with another account's key", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-1"))
    const other = client(fake, fake.addAccount({ livemode: true, restricted: true }).key)
    const error = await failure(other.checkout.sessions.retrieve(session.id))
    expect(error.statusCode).toBe(404)
    expect(error.code).toBe("resource_missing")
  })
})

describe("webhook endpoints", () => {
  it("are created with a whsec_ secret (shown only then) and deleted", async () => {
    const endpoint = await stripe.webhookEndpoints.create({
      url: "https://kassa.example/provider-webhooks/stripe/link-1",
      enabled_events: ["checkout.session.completed"]
    })
    expect(endpoint.id).toMatch(/^we_/)
    expect(endpoint.secret).toMatch(/^whsec_/)
    expect(endpoint.enabled_events).toEqual(["checkout.session.completed"])
    const deleted = await stripe.webhookEndpoints.del(endpoint.id)
    expect(deleted).toMatchObject({ id: endpoint.id, deleted: true })
    expect((await failure(stripe.webhookEndpoints.del(endpoint.id))).statusCode).toBe(404)
  })
})

describe("checkout sessions", () => {
  it("are created from §10's parameters, form-encoded by the SDK, and read back the same", async () => {
    const created = await stripe.checkout.sessions.create(sessionParams(fake, "p-2"))
    expect(created).toMatchObject({
      object: "checkout.session",
      status: "open",
      payment_status: "unpaid",
      mode: "payment",
      amount_total: 2_500,
      currency: "eur",
      client_reference_id: "p-2",
      metadata: { kassa_payment_id: "p-2" },
      customer_email: "ada@example.com",
      payment_intent: null,
      livemode: false
    })
    expect(created.id).toMatch(/^cs_test_/)
    expect(created.url).toBe(`${fake.url}/pay/${created.id}`)
    const sent = fake.requests.find((request) => request.path === "/v1/checkout/sessions")
    expect(sent?.params).toMatchObject({
      line_items: [{ price_data: { currency: "eur", unit_amount: "2500", product_data: { name: "Order 42" } } }],
      payment_intent_data: { metadata: { kassa_payment_id: "p-2" } },
      allowed_payment_method_types: ["card"]
    })
    const { lastResponse: _, ...read } = await stripe.checkout.sessions.retrieve(created.id)
    const { lastResponse: __, ...first } = created
    expect(read).toEqual(first)
  })

  it("refuse expires_at outside Stripe's 30 min – 24 h window, naming the parameter", async () => {
    const error = await failure(
      stripe.checkout.sessions.create({ ...sessionParams(fake, "p-3"), expires_at: fake.now() + 25 * 3_600 })
    )
    expect(error.type).toBe("StripeInvalidRequestError")
    expect(error.param).toBe("expires_at")
    expect(fake.sessions()).toHaveLength(0)
  })

  it("a session paid on the hosted page: 303 to success_url, complete and paid, a signed checkout.session.completed", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-4"))
    const page = await (await fetch(String(session.url))).text()
    for (const button of ["Pay", "Decline", "Abandon"]) expect(page).toContain(`>${button}</button>`)

    const answer = await payOnPage(session, "pay")
    expect(answer.status).toBe(303)
    expect(answer.headers.get("location")).toBe(session.success_url)

    const paid = await stripe.checkout.sessions.retrieve(session.id)
    expect(paid.status).toBe("complete")
    expect(paid.payment_status).toBe("paid")
    expect(paid.payment_intent).toMatch(/^pi_/)
    expect(paid.customer_details).toMatchObject({ name: "Ada Lovelace", email: "ada@example.com", phone: null })

    const [event] = await received(1)
    expect(event?.type).toBe("checkout.session.completed")
    const object = objectOf<Stripe.Checkout.Session>(event)
    expect(object.id).toBe(session.id)
    expect(object.payment_status).toBe("paid")
    expect(object.metadata).toEqual({ kassa_payment_id: "p-4" })
  })

  it("a signature over another body, or with another secret, is refused by the SDK", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-5"))
    fake.pay(session.id)
    await received(1)
    const [request] = receiver.received("/stripe")
    const header = String(request?.headers["stripe-signature"])
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    const tampered = String(request?.body).replace("checkout.session.completed", "checkout.session.expired")
    expect(() => stripe.webhooks.constructEvent(tampered, header, secret)).toThrow(
      Stripe.errors.StripeSignatureVerificationError
    )
    expect(() => stripe.webhooks.constructEvent(String(request?.body), header, "whsec_other")).toThrow(
      Stripe.errors.StripeSignatureVerificationError
    )
  })

  it("Decline leaves the session open; Abandon goes to cancel_url and leaves it open; no events", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-6"))
    const declined = await payOnPage(session, "decline")
    expect(declined.status).toBe(402)
    expect(await declined.text()).toContain("Your card was declined.")
    const abandoned = await payOnPage(session, "abandon")
    expect(abandoned.status).toBe(303)
    expect(abandoned.headers.get("location")).toBe(session.cancel_url)
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe("open")
    await fake.settled()
    expect(fake.events).toHaveLength(0)
  })

  it("expire: an open session expires with checkout.session.expired; a paid one cannot be expired", async () => {
    const open = await stripe.checkout.sessions.create(sessionParams(fake, "p-7"))
    const expired = await stripe.checkout.sessions.expire(open.id)
    expect(expired.status).toBe("expired")
    const [event] = await received(1)
    expect(event?.type).toBe("checkout.session.expired")
    const page = await fetch(String(open.url))
    expect(page.status).toBe(410)

    const paid = await stripe.checkout.sessions.create(sessionParams(fake, "p-8"))
    fake.pay(paid.id)
    const error = await failure(stripe.checkout.sessions.expire(paid.id))
    expect(error.type).toBe("StripeInvalidRequestError")
    expect((await stripe.checkout.sessions.retrieve(paid.id)).status).toBe("complete")
  })

  it("Stripe expires an open session itself at expires_at (the fake's clock)", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-9"))
    fake.advance(3_599)
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe("open")
    fake.advance(1)
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe("expired")
    expect((await received(1))[0]?.type).toBe("checkout.session.expired")
  })

  it("a delayed method completes unpaid, then async_payment_failed", async () => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, "p-10"))
    fake.pay(session.id, { name: "Ada" }, { delayed: true })
    expect(await stripe.checkout.sessions.retrieve(session.id)).toMatchObject({
      status: "complete",
      payment_status: "unpaid"
    })
    fake.settleDelayed(session.id, "failed")
    const types = (await received(2)).map((event) => event.type)
    expect(types).toEqual(["checkout.session.completed", "checkout.session.async_payment_failed"])
  })
})

describe("Idempotency-Key (https://docs.stripe.com/idempotency)", () => {
  it("the same key and parameters replay the first answer; one session exists", async () => {
    const params = sessionParams(fake, "p-11")
    const first = await stripe.checkout.sessions.create(params, { idempotencyKey: "kassa-create-p-11" })
    const again = await stripe.checkout.sessions.create(params, { idempotencyKey: "kassa-create-p-11" })
    expect(again.id).toBe(first.id)
    expect(again.lastResponse.headers["idempotent-replayed"]).toBe("true")
    expect(fake.sessions()).toHaveLength(1)
  })

  it("the same key with other parameters is a 400 idempotency_error", async () => {
    await stripe.checkout.sessions.create(sessionParams(fake, "p-12"), { idempotencyKey: "kassa-create-p-12" })
    const error = await failure(
      stripe.checkout.sessions.create(sessionParams(fake, "p-12", 9_999), { idempotencyKey: "kassa-create-p-12" })
    )
    expect(error.type).toBe("StripeIdempotencyError")
    expect(error.statusCode).toBe(400)
    expect(fake.sessions()).toHaveLength(1)
  })

  it("a request that fails validation is not kept: the key can be used again with good parameters", async () => {
    const bad = { ...sessionParams(fake, "p-13"), expires_at: fake.now() + 60 }
    expect((await failure(stripe.checkout.sessions.create(bad, { idempotencyKey: "k-13" }))).param).toBe("expires_at")
    const good = await stripe.checkout.sessions.create(sessionParams(fake, "p-13"), { idempotencyKey: "k-13" })
    expect(good.status).toBe("open")
  })

  it("keys belong to the account: another account's same key is a new request", async () => {
    await stripe.checkout.sessions.create(sessionParams(fake, "p-14"), { idempotencyKey: "shared-key" })
    const other = client(fake, fake.addAccount().key)
    const theirs = await other.checkout.sessions.create(sessionParams(fake, "p-14", 100), {
      idempotencyKey: "shared-key"
    })
    expect(theirs.amount_total).toBe(100)
  })
})

describe("refunds", () => {
  const paidSession = async (paymentId: string, amount = 2_500) => {
    const session = await stripe.checkout.sessions.create(sessionParams(fake, paymentId, amount))
    return fake.pay(session.id, { name: "Ada" })
  }

  it("are created on the payment intent with the refund id as Idempotency-Key; refund.created and charge.refunded", async () => {
    const session = await paidSession("p-20")
    const refund = await stripe.refunds.create(
      { payment_intent: String(session.payment_intent), amount: 1_000, metadata: { kassa_refund_id: "r-1" } },
      { idempotencyKey: "r-1" }
    )
    expect(refund).toMatchObject({ object: "refund", amount: 1_000, status: "succeeded", currency: "eur" })
    expect(refund.metadata).toEqual({ kassa_refund_id: "r-1" })
    const replay = await stripe.refunds.create(
      { payment_intent: String(session.payment_intent), amount: 1_000, metadata: { kassa_refund_id: "r-1" } },
      { idempotencyKey: "r-1" }
    )
    expect(replay.id).toBe(refund.id)
    expect((await stripe.refunds.retrieve(refund.id)).status).toBe("succeeded")
    const types = (await received(3)).map((event) => event.type)
    expect(types).toEqual(["checkout.session.completed", "refund.created", "charge.refunded"])
    const charge = objectOf<Stripe.Charge>((await received(3))[2])
    expect(charge.amount_refunded).toBe(1_000)
    // No `refunds` on a Charge since API 2022-11-15 (https://docs.stripe.com/upgrades#2022-11-15): they are listed.
    expect("refunds" in charge).toBe(false)
    const listed = await stripe.refunds.list({ payment_intent: String(session.payment_intent) })
    expect(listed.data.map((one) => one.id)).toEqual([refund.id])
  })

  it("more than the unrefunded amount is refused with amount_too_large", async () => {
    const session = await paidSession("p-21", 2_500)
    await stripe.refunds.create({ payment_intent: String(session.payment_intent), amount: 2_000 })
    const error = await failure(stripe.refunds.create({ payment_intent: String(session.payment_intent), amount: 600 }))
    expect(error.code).toBe("amount_too_large")
  })

  it("a pending refund settles later with refund.updated", async () => {
    const session = await paidSession("p-22")
    fake.nextRefundStatus("pending")
    const refund = await stripe.refunds.create({ payment_intent: String(session.payment_intent), amount: 500 })
    expect(refund.status).toBe("pending")
    fake.settleRefund(refund.id, "succeeded")
    expect((await stripe.refunds.retrieve(refund.id)).status).toBe("succeeded")
    const types = (await received(4)).map((event) => event.type)
    expect(types).toEqual(["checkout.session.completed", "refund.created", "refund.updated", "charge.refunded"])
  })

  it("a refund that succeeded and later fails: refund.updated and refund.failed, and it reads failed", async () => {
    const session = await paidSession("p-23")
    const refund = await stripe.refunds.create({ payment_intent: String(session.payment_intent), amount: 2_500 })
    expect(refund.status).toBe("succeeded")
    fake.failSucceededRefund(refund.id)
    const read = await stripe.refunds.retrieve(refund.id)
    expect(read.status).toBe("failed")
    expect(read.failure_reason).toBe("expired_or_canceled_card")
    const types = (await received(5)).map((event) => event.type)
    expect(types.slice(3)).toEqual(["refund.updated", "refund.failed"])
  })

  it("a refund made in Stripe's dashboard arrives as refund.created without Kassa's metadata", async () => {
    const session = await paidSession("p-24")
    const refund = fake.refundInDashboard(String(session.payment_intent), 700)
    const created = (await received(3))[1]
    expect(created?.type).toBe("refund.created")
    const object = objectOf<Stripe.Refund>(created)
    expect(object.id).toBe(refund.id)
    expect(object.metadata).toEqual({})
    expect(object.payment_intent).toBe(session.payment_intent)
  })
})

describe("faults the SDK sees", () => {
  it("500 before Stripe ran it: StripeAPIError, nothing created", async () => {
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "status", status: 500 })
    const error = await failure(stripe.checkout.sessions.create(sessionParams(fake, "p-30")))
    expect(error.type).toBe("StripeAPIError")
    expect(error.statusCode).toBe(500)
    expect(fake.sessions()).toHaveLength(0)
  })

  it("500 then success: an SDK allowed one retry resends the same Idempotency-Key and one session exists", async () => {
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "status", status: 500 })
    const retrying = client(fake, fake.secretKey, 1)
    const session = await retrying.checkout.sessions.create(sessionParams(fake, "p-31"), { idempotencyKey: "k-31" })
    expect(session.status).toBe("open")
    const attempts = fake.requests.filter((request) => request.path === "/v1/checkout/sessions")
    expect(attempts.map((attempt) => [attempt.status, attempt.idempotencyKey])).toEqual([
      [500, "k-31"],
      [200, "k-31"]
    ])
    expect(fake.sessions()).toHaveLength(1)
  })

  it("429: StripeRateLimitError, nothing created", async () => {
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "status", status: 429 })
    const error = await failure(stripe.checkout.sessions.create(sessionParams(fake, "p-32")))
    expect(error.type).toBe("StripeRateLimitError")
    expect(error.statusCode).toBe(429)
    expect(fake.sessions()).toHaveLength(0)
  })

  /**
   * What a call the fake never answers proves does not depend on how long the SDK waits, so these calls wait 3 s
   * rather than the adapter's 10 s: the test stays far from its own timeout on a slow machine (issue 11 §19), and a
   * 3 s wait still leaves the fake ample time to run a `hang-after` create before the client gives up.
   */
  const impatient = () => client(fake, fake.secretKey, 0, 3_000)

  it("no answer: the SDK's timeout ends the call with StripeConnectionError, nothing created", async () => {
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang" })
    const error = await failure(
      impatient().checkout.sessions.create(sessionParams(fake, "p-33"), { idempotencyKey: "k-33" })
    )
    expect(error.type).toBe("StripeConnectionError")
    expect(fake.sessions()).toHaveLength(0)
  })

  it("created but never answered: the call times out, and the retry with the same key replays the session", async () => {
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang-after" })
    const params = sessionParams(fake, "p-34")
    const error = await failure(impatient().checkout.sessions.create(params, { idempotencyKey: "k-34" }))
    expect(error.type).toBe("StripeConnectionError")
    expect(fake.sessions()).toHaveLength(1)
    const replayed = await stripe.checkout.sessions.create(params, { idempotencyKey: "k-34" })
    expect(replayed.id).toBe(fake.sessions()[0]?.id)
    expect(replayed.lastResponse.headers["idempotent-replayed"]).toBe("true")
    // What Kassa's clean-up does next: nobody can pay a failed payment.
    expect((await stripe.checkout.sessions.expire(replayed.id)).status).toBe("expired")
  })
})

describe("events (https://docs.stripe.com/webhooks)", () => {
  const twoEvents = async () => {
    const first = await stripe.checkout.sessions.create(sessionParams(fake, "p-40"))
    const second = await stripe.checkout.sessions.create(sessionParams(fake, "p-41"))
    fake.pay(first.id)
    await stripe.checkout.sessions.expire(second.id)
    return [first, second] as const
  }

  it("a dropped event exists at Stripe but never reaches the endpoint", async () => {
    fake.eventFault({ drop: true, type: "checkout.session.completed" })
    await twoEvents()
    const arrived = await received(1)
    expect(arrived.map((event) => event.type)).toEqual(["checkout.session.expired"])
    expect(fake.events.map((event) => event.type)).toEqual(["checkout.session.completed", "checkout.session.expired"])
  })

  it("a duplicated event arrives twice with the same id", async () => {
    fake.eventFault({ duplicates: 1 })
    await twoEvents()
    const arrived = await received(3)
    const completed = arrived.filter((event) => event.type === "checkout.session.completed")
    expect(completed).toHaveLength(2)
    expect(completed[0]?.id).toBe(completed[1]?.id)
    expect(arrived.filter((event) => event.type === "checkout.session.expired")).toHaveLength(1)
  })

  it("held events are released in reverse order", async () => {
    fake.hold()
    await twoEvents()
    await fake.settled()
    expect(receiver.received("/stripe")).toHaveLength(0)
    await fake.release("reversed")
    const arrived = await received(2)
    expect(arrived.map((event) => event.type)).toEqual(["checkout.session.expired", "checkout.session.completed"])
  })

  it("a delayed event still arrives, once (its order is asserted with hold/release, which does not depend on speed)", async () => {
    fake.eventFault({ delayMs: 200, type: "checkout.session.completed" })
    await twoEvents()
    const arrived = await received(2)
    expect(arrived.map((event) => event.type).sort()).toEqual([
      "checkout.session.completed",
      "checkout.session.expired"
    ])
    expect(fake.deliveries.filter((delivery) => delivery.type === "checkout.session.completed")).toHaveLength(1)
  })

  it("an event carries the snapshot of its object, the request that caused it and the pinned API version", async () => {
    const [, second] = await twoEvents()
    const expired = (await received(2)).find((event) => event.type === "checkout.session.expired")
    expect(expired?.api_version).toBe(apiVersion)
    expect(expired?.request?.idempotency_key).toEqual(expect.any(String))
    expect(objectOf<Stripe.Checkout.Session>(expired).id).toBe(second.id)
    expect(expired?.id).toMatch(/^evt_/)
  })
})
