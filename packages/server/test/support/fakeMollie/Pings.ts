/**
 * Mollie's classic webhook (research mollie.md §4, https://docs.mollie.com/reference/webhooks): a form POST `id=tr_…`
 * to the payment's `webhookUrl`, unsigned; a non-2xx answer (or none within 15 s) is tried again, 10 attempts over
 * 26 h at 0, +1, +2, +4, +8, +16, +29 min, +1 h, +2 h and +22 h ([old] overview/webhooks.rst), compressed here by
 * the test's `minuteMs` (how many real milliseconds stand for one of Mollie's minutes).
 */

/** Minutes between attempts: the first at once, then Mollie's schedule. */
export const retryMinutes: ReadonlyArray<number> = [0, 1, 2, 4, 8, 16, 29, 60, 120, 22 * 60]

export interface Ping {
  readonly paymentId: string
  readonly url: string
  /** 1 for the first attempt. */
  readonly attempt: number
  /** The receiver's HTTP status, or the network error. */
  readonly status: number | string
}

export interface PingFault {
  /** Lost: never sent, never retried. */
  readonly drop?: boolean
  /** Extra copies sent after the first. */
  readonly repeat?: number
  readonly count?: number
}

export interface Pings {
  readonly sent: ReadonlyArray<Ping>
  readonly send: (paymentId: string, url: string | null) => void
  readonly fault: (fault: PingFault) => void
  /** Resolves when no ping is in flight or waiting for its next attempt. */
  readonly settled: () => Promise<void>
  readonly stop: () => void
}

export const makePings = (minuteMs: number): Pings => {
  const sent: Array<Ping> = []
  const faults: Array<PingFault & { remaining: number }> = []
  const pending = new Set<Promise<void>>()
  const timers = new Set<NodeJS.Timeout>()
  let stopped = false

  const attempt = async (paymentId: string, url: string, index: number): Promise<void> => {
    let status: number | string
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "Mollie.com/Webhook" },
        body: new URLSearchParams({ id: paymentId }).toString(),
        // Mollie waits 15 s for an answer (mollie.md §4); a redirect is not followed as a POST (307/308 only).
        signal: AbortSignal.timeout(15_000),
        redirect: "manual"
      })
      await response.arrayBuffer()
      status = response.status
    } catch (error) {
      status = error instanceof Error ? error.message : String(error)
    }
    sent.push({ paymentId, url, attempt: index + 1, status })
    const ok = typeof status === "number" && status >= 200 && status < 300
    const next = retryMinutes[index + 1]
    if (ok || next === undefined || stopped) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer)
        resolve()
      }, next * minuteMs)
      timers.add(timer)
    })
    if (!stopped) await attempt(paymentId, url, index + 1)
  }

  const track = (work: Promise<void>) => {
    pending.add(work)
    void work.finally(() => pending.delete(work))
  }

  return {
    sent,
    send: (paymentId, url) => {
      if (url === null || stopped) return
      const rule = faults[0]
      if (rule !== undefined && --rule.remaining <= 0) faults.shift()
      if (rule?.drop === true) return
      const copies = 1 + (rule?.repeat ?? 0)
      // After the API answer, as Mollie does: the webhook is asynchronous.
      setImmediate(() => {
        for (let copy = 0; copy < copies; copy++) track(attempt(paymentId, url, 0))
      })
    },
    fault: (fault) => {
      faults.push({ ...fault, remaining: fault.count ?? 1 })
    },
    settled: async () => {
      await new Promise((resolve) => setImmediate(resolve))
      while (pending.size > 0) {
        await Promise.all([...pending])
        await new Promise((resolve) => setImmediate(resolve))
      }
    },
    stop: () => {
      stopped = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
    }
  }
}
