/** The fake's clock, in Unix seconds: Stripe's time as the tests move it, so Stripe's own expiry is a test step. */
export interface Clock {
  now: number
}

export const makeClock = (): Clock => ({ now: Math.floor(Date.now() / 1000) })
