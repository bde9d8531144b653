/**
 * Stripe accounts and their API keys: who a request is from, and which account each object the fake keeps belongs
 * to.
 */
import { randomBytes } from "node:crypto"
import { noSuch, StripeFailure } from "./Failures.ts"
import { randomId } from "./Fixtures.ts"
import type { JsonObject } from "./Json.ts"

export interface Account {
  readonly id: string
  readonly livemode: boolean
  /**
   * Payment methods the account has switched off in its Dashboard (Settings → Payment methods): Checkout leaves them
   * out of a session (https://docs.stripe.com/payments/payment-methods/dynamic-payment-methods).
   */
  readonly disabledMethods: Set<string>
}

/** An object kept for one account. */
export interface Stored {
  readonly account: string
  readonly object: JsonObject
}

export const find = <A extends Stored>(
  map: Map<string, A>,
  id: string,
  account: string,
  object: string,
  param: string
) => {
  const found = map.get(id)
  // Objects belong to one account: another account's key gets "No such …" (https://docs.stripe.com/api/errors).
  if (found === undefined || found.account !== account) throw noSuch(object, id, param)
  return found
}

export interface Accounts {
  /** Adds an account with its own key: `sk_live_…` when `livemode`, `rk_…` when `restricted`. */
  readonly add: (options?: { readonly livemode?: boolean; readonly restricted?: boolean }) => {
    readonly key: string
    readonly accountId: string
  }
  /** Another secret key of an existing account (Stripe's "Roll key", or a restricted key beside the standard one). */
  readonly addKey: (accountId: string, options?: { readonly restricted?: boolean }) => string
  readonly get: (id: string) => Account | undefined
  /** The account of the request's `Authorization` header, or Stripe's 401. */
  readonly authenticate: (header: string | undefined) => Account
}

export const makeAccounts = (): Accounts => {
  const keys = new Map<string, Account>()
  const accounts = new Map<string, Account>()
  return {
    add: (opts = {}) => {
      const livemode = opts.livemode ?? false
      const account: Account = { id: randomId("acct"), livemode, disabledMethods: new Set() }
      const key = `${opts.restricted === true ? "rk" : "sk"}_${livemode ? "live" : "test"}_${randomBytes(24).toString("hex")}`
      accounts.set(account.id, account)
      keys.set(key, account)
      return { key, accountId: account.id }
    },
    addKey: (accountId, opts = {}) => {
      const account = accounts.get(accountId)
      if (account === undefined) throw new Error(`no account ${accountId}`)
      const key = `${opts.restricted === true ? "rk" : "sk"}_${account.livemode ? "live" : "test"}_${randomBytes(24).toString("hex")}`
      keys.set(key, account)
      return key
    },
    get: (id) => accounts.get(id),
    /**
     * The API key comes as HTTP Basic or Bearer (https://docs.stripe.com/api/authentication); a key Stripe does not
     * know gets 401 "Invalid API Key provided".
     */
    authenticate: (header) => {
      const key = header?.startsWith("Bearer ")
        ? header.slice(7)
        : header?.startsWith("Basic ")
          ? Buffer.from(header.slice(6), "base64").toString("utf8").replace(/:$/, "")
          : undefined
      if (key === undefined || key === "") {
        throw new StripeFailure(401, {
          type: "invalid_request_error",
          message:
            "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
        })
      }
      const account = keys.get(key)
      if (account === undefined) {
        throw new StripeFailure(401, {
          type: "invalid_request_error",
          message: `Invalid API Key provided: ${key.slice(0, 8)}${"*".repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`
        })
      }
      return account
    }
  }
}
