/** `kassa webhooks verify`: a valid delivery, and each way one can be invalid. */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { sign } from "@kassa/webhook-verify"
import { describe, expect, it } from "vitest"
import { json, kassa, kassaProcess } from "./support.ts"

const secret = "whsec_clitestclitestclitestclitest12"
const event = {
  id: "evt_0b3c8f0e-1111-4222-8333-444455556666",
  event: "payment.paid",
  created_at: "2026-01-01T00:00:00.000Z",
  data: { id: "6f1c2d3e-aaaa-4bbb-8ccc-dddddddddddd", status: "paid", amount: 1250 }
}
const body = JSON.stringify(event, null, 2)
const dir = mkdtempSync(join(tmpdir(), "kassa-cli-verify-"))
const file = (name: string, content: string) => {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}
const bodyFile = file("body.json", body)

interface Verdict {
  readonly valid: boolean
  readonly reason?: string
  readonly message?: string
  readonly event?: string
  readonly id?: string
  readonly payment_id?: string
  readonly payment_status?: string
  readonly skew_seconds: number | null
}

const verifyCli = (args: ReadonlyArray<string>, env: Record<string, string> = { KASSA_WEBHOOK_SECRET: secret }) =>
  kassa(["webhooks", "verify", ...args], { env })

describe.concurrent("kassa webhooks verify", () => {
  it("a valid signature: exit 0, the event, its id and the payment", async () => {
    const header = await sign(body, secret)
    const result = await verifyCli(["--header", header, "--body-file", bodyFile, "--json"])
    expect(result.code, result.stderr).toBe(0)
    expect(json<Verdict>(result)).toMatchObject({
      valid: true,
      event: "payment.paid",
      id: event.id,
      payment_id: event.data.id,
      payment_status: "paid"
    })
    const text = await kassa(
      ["webhooks", "verify", "--secret", secret, "--header", `X-Service-Signature: ${header}`, "--body-file", bodyFile],
      {}
    )
    expect(text.code).toBe(0)
    expect(text.stdout).toContain("Signature valid.")
    expect(text.stdout).toContain("payment.paid")
    expect(text.stdout).toContain(event.data.id)
    // The body on stdin of a real process: what `--body-file -` reads there, not a test's stand-in.
    const stdin = await kassaProcess(["webhooks", "verify", "--header", header, "--body-file", "-"], {
      env: { KASSA_WEBHOOK_SECRET: secret },
      input: body
    })
    expect(stdin.code).toBe(0)
  })

  it("a missing header", async () => {
    const result = await verifyCli(["--body-file", bodyFile, "--json"])
    expect(result.code).toBe(1)
    expect(json<Verdict>(result)).toMatchObject({ valid: false, reason: "missing_header" })
  })

  it("a malformed header", async () => {
    const result = await verifyCli(["--header", "v1=abc,t=soon", "--body-file", bodyFile])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("Signature invalid: malformed_header")
    expect(result.stdout).toContain("v1 must be 64 lowercase hex characters")
  })

  it("a timestamp outside the tolerance, with the skew in seconds", async () => {
    const header = await sign(body, secret, { timestamp: Math.floor(Date.now() / 1000) - 1000 })
    const result = await verifyCli(["--header", header, "--body-file", bodyFile, "--json"])
    expect(result.code).toBe(1)
    const verdict = json<Verdict>(result)
    expect(verdict).toMatchObject({ valid: false, reason: "timestamp_outside_tolerance" })
    expect(verdict.skew_seconds).toBeGreaterThanOrEqual(1000)
    expect(verdict.skew_seconds).toBeLessThan(1030)
    expect(verdict.message).toMatch(/t is 10\d\d s in the past/)
    const wider = await verifyCli(["--header", header, "--body-file", bodyFile, "--tolerance", "3600"])
    expect(wider.code).toBe(0)
  })

  it("no matching signature: the wrong secret", async () => {
    const header = await sign(body, "whsec_someoneelsesomeoneelsesomeone1")
    const result = await verifyCli(["--header", header, "--body-file", bodyFile])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("Signature invalid: no_matching_signature")
    expect(result.stdout).toContain("check the webhook secret")
  })

  it("a body that was re-serialised, and one that gained a newline", async () => {
    const header = await sign(body, secret)
    const parsed = file("parsed.json", JSON.stringify(JSON.parse(body)))
    const reformatted = await verifyCli([
      "--header",
      await sign(JSON.stringify(event), secret),
      "--body-file",
      bodyFile,
      "--json"
    ])
    expect(reformatted.code).toBe(1)
    // Signed compact, saved pretty-printed: the body was parsed and re-serialised on the way.
    expect(json<Verdict>(reformatted)).toMatchObject({ valid: false, reason: "body_already_parsed" })
    const compactFile = await verifyCli(["--header", header, "--body-file", parsed, "--json"])
    expect(json<Verdict>(compactFile).reason).toBe("no_matching_signature")
    const newline = await verifyCli(["--header", header, "--body-file", file("newline.json", `${body}\n`), "--json"])
    expect(newline.code).toBe(1)
    expect(json<Verdict>(newline)).toMatchObject({ reason: "no_matching_signature" })
    expect(json<Verdict>(newline).message).toContain("trailing")
  })

  it("usage errors: no secret, no body file, an unreadable body file (exit 2)", async () => {
    const header = await sign(body, secret)
    const noSecret = await verifyCli(["--header", header, "--body-file", bodyFile], {})
    expect(noSecret.code).toBe(2)
    expect(noSecret.stderr).toContain("--secret")
    const noBody = await verifyCli(["--header", header])
    expect(noBody.code).toBe(2)
    const unreadable = await verifyCli(["--header", header, "--body-file", join(dir, "nope.json")])
    expect(unreadable.code).toBe(2)
    expect(unreadable.stderr).toContain("Cannot read the body file")
  })
})
