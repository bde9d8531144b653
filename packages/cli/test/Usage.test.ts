/** A wrong command line is answered with one line saying what is wrong and a hint, on stderr, not the whole help. */
import { describe, expect, it } from "vitest"
import { kassa } from "./support.ts"

const lines = (text: string) => text.trimEnd().split("\n")

describe.concurrent("usage errors", () => {
  it("a missing --api-key: one line naming the flag, a hint naming KASSA_API_KEY, no help; exit 2", async () => {
    const result = await kassa(["events", "list"], { env: { KASSA_BASE_URL: "http://127.0.0.1:9" } })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(lines(result.stderr)).toEqual([
      "kassa events list: Missing required flag: --api-key",
      "Hint: set KASSA_API_KEY or pass --api-key; `kassa events list --help` shows the usage."
    ])
  })

  it("a mistyped command: one line, a hint with the command it was close to; a malformed value names the flag", async () => {
    const typo = await kassa(["evnts", "list"])
    expect(typo.code).toBe(2)
    expect(typo.stdout).toBe("")
    expect(lines(typo.stderr)).toEqual([
      'kassa: Unknown subcommand "evnts" for "kassa"',
      "Hint: did you mean events? `kassa --help` shows the usage."
    ])

    const malformed = await kassa(["events", "list", "--limit", "many"], { env: { KASSA_API_KEY: "pk_test_x" } })
    expect(malformed.code).toBe(2)
    expect(malformed.stdout).toBe("")
    const [what, hint, ...rest] = lines(malformed.stderr)
    expect(what).toMatch(/^kassa events list: Invalid value for flag --limit: "many"\./)
    expect(hint).toBe("Hint: `kassa events list --help` shows the usage.")
    expect(rest).toEqual([])
  })

  it("--help still prints the whole help on stdout, exit 0", async () => {
    const help = await kassa(["events", "list", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("--api-key")
    expect(help.stderr).toBe("")
  })
})
