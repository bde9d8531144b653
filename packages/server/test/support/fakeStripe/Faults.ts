/** Faults injected into API requests: which requests to spoil next, and how. */

/**
 * How to spoil the next matching API request.
 * - `status`: answered with that HTTP status and Stripe's error body before Stripe runs the request, so nothing is
 *   kept under its Idempotency-Key (https://docs.stripe.com/idempotency: results are saved only once "execution of
 *   an endpoint begins"). 429 is Stripe's rate limit (https://docs.stripe.com/rate-limits). `shouldRetry` sets
 *   `Stripe-Should-Retry`, which the SDK obeys.
 * - `hang`: never answered and never run (the caller's timeout decides).
 * - `closed`: the connection reset under the request, which is never run: what a client meets when it writes on a
 *   kept-alive connection the server had closed while idle (https://nodejs.org/api/http.html#requestreusedsocket).
 * - `hang-after`: run, kept under its Idempotency-Key, and never answered: a create Kassa timed out on that Stripe did.
 * - `status-after`: run, kept under its Idempotency-Key, then answered with that status (5xx): the answer was lost on
 *   the way back, so a retry with the same key replays what Stripe did (https://docs.stripe.com/idempotency).
 * - `delay-after`: run, then answered `ms` later: the object exists (and its events may go out) before the caller
 *   hears of it (https://docs.stripe.com/webhooks#event-ordering: events are not guaranteed in any order).
 */
export type Fault =
  | { readonly kind: "status"; readonly status: number; readonly shouldRetry?: boolean }
  | { readonly kind: "hang" }
  | { readonly kind: "closed" }
  | { readonly kind: "hang-after" }
  | { readonly kind: "status-after"; readonly status: number }
  | { readonly kind: "delay-after"; readonly ms: number }

interface FaultRule {
  readonly method: string | undefined
  readonly path: RegExp
  readonly fault: Fault
  remaining: number
}

export interface Faults {
  /** Spoils the next `times` requests matching `method` and `path`. */
  readonly inject: (
    match: { readonly method?: string; readonly path: string | RegExp },
    fault: Fault,
    times?: number
  ) => void
  /** The fault for this request, if a rule matches it (using up one of the rule's `times`). */
  readonly take: (method: string, path: string) => Fault | undefined
}

export const makeFaults = (): Faults => {
  const rules: Array<FaultRule> = []
  return {
    inject: (match, fault, times = 1) => {
      const path =
        typeof match.path === "string"
          ? new RegExp(`^${match.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`)
          : match.path
      rules.push({ method: match.method, path, fault, remaining: times })
    },
    take: (method, path) => {
      const ruleIndex = rules.findIndex(
        (rule) => (rule.method === undefined || rule.method === method) && rule.path.test(path)
      )
      const fault = ruleIndex === -1 ? undefined : rules[ruleIndex]?.fault
      if (ruleIndex !== -1) {
        const rule = rules[ruleIndex]
        if (rule !== undefined && --rule.remaining <= 0) rules.splice(ruleIndex, 1)
      }
      return fault
    }
  }
}
