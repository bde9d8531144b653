/**
 * Who may do what in the dashboards (issue #6): operator admins (service staff) act on every application; within one
 * application a member is an owner (everything), a developer (keys, webhooks, deliveries, payments — live refund
 * requests, and simulating, cancelling and refunding test payments: issue 22 §3) or a viewer (read only). Pages and handlers ask {@link can}; nothing else decides.
 */
import { Schema } from "effect"

export const Role = Schema.Literals(["owner", "developer", "viewer"])
export type Role = typeof Role.Type

/** What a dashboard action needs. `view` is reading an application's pages. */
export const Permission = Schema.Literals([
  "view",
  "manage_keys",
  "manage_webhooks",
  "resend_deliveries",
  "request_refunds",
  "manage_test_payments",
  "manage_members"
])
export type Permission = typeof Permission.Type

/** The signed-in user's standing towards one application. */
export interface Access {
  readonly operatorAdmin: boolean
  /** Their membership's role in the application, or null when they are not a member. */
  readonly role: Role | null
}

const grants: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set(Permission.literals),
  developer: new Set([
    "view",
    "manage_keys",
    "manage_webhooks",
    "resend_deliveries",
    "request_refunds",
    "manage_test_payments"
  ]),
  viewer: new Set(["view"])
}

/** Whether `access` allows `permission` in the application. Operator admins may do everything everywhere. */
export const can = (access: Access, permission: Permission): boolean =>
  access.operatorAdmin || (access.role !== null && grants[access.role].has(permission))

/** The permissions of a role, in the order of {@link Permission} (for the members page). */
export const permissionsOf = (role: Role): ReadonlyArray<Permission> =>
  Permission.literals.filter((permission) => grants[role].has(permission))

/**
 * Whether `access` shows webhook URLs whole — with the user part and query that may carry the receiver's token
 * (issue #11). Owners and operator admins only; everyone else sees `UrlMask.mask`ed URLs.
 */
export const seesUrlSecrets = (access: Access): boolean => access.operatorAdmin || access.role === "owner"
