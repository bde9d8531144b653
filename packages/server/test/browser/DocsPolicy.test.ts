/**
 * The API reference under its Content-Security-Policy (issue 11 §16), in Chromium: Scalar renders the contract and
 * the policy refuses nothing it needs — the policy is as narrow as the page allows, and no narrower.
 */
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch } from "../support/Browser.ts"
import { type RunningServer, startServer } from "../support/TestServer.ts"

describe("/docs in Chromium", () => {
  let server: RunningServer
  let browser: Browser
  beforeAll(async () => {
    server = await startServer("pglite")
    browser = await launch()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it("Scalar renders the reference with no Content-Security-Policy violation", async () => {
    const page = await browser.newPage()
    const violations: Array<string> = []
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text())
    })
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(
          `Refused to load: ${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}:${event.columnNumber} ${event.sample}`
        )
      })
    })
    const response = await page.goto(`${server.baseUrl}/docs`)
    expect(response?.headers()["content-security-policy"]).toContain("default-src 'none'")
    // Scalar's rendered sidebar lists the operations of the contract.
    await page.getByText("Create a payment", { exact: false }).first().waitFor({ timeout: 30_000 })
    await page.waitForLoadState("networkidle")
    // Scalar's bundled schema library probes whether it may compile validators (`try { new Function("") }`) and
    // falls back when refused: that probe is the one refusal the page meets, and it is refused on purpose.
    expect(violations.filter((violation) => !violation.startsWith("Refused to load: script-src eval "))).toEqual([])
    await page.close()
  })
})
