/**
 * How an application's status may change (decisions §5, issue #6): a new application waits for review and is
 * approved (`pending_review` → `active`); an active one can be suspended; any but a disabled one can be disabled; a
 * suspended or disabled one can be reactivated. The dashboards offer and accept exactly these moves. (The operator
 * API's PATCH sets any status: it is the operators' tool of last resort.)
 */
import type { ApplicationStatus } from "./Application.ts"

export type Move = "approve" | "reactivate" | "suspend" | "disable"

export const moves: Readonly<
  Record<Move, { readonly from: ReadonlyArray<ApplicationStatus>; readonly to: ApplicationStatus }>
> = {
  approve: { from: ["pending_review"], to: "active" },
  reactivate: { from: ["suspended", "disabled"], to: "active" },
  suspend: { from: ["active"], to: "suspended" },
  disable: { from: ["pending_review", "active", "suspended"], to: "disabled" }
}

/** The moves open to an application in `status`, in the order the dashboards offer them. */
export const available = (status: ApplicationStatus): ReadonlyArray<Move> =>
  (Object.keys(moves) as Array<Move>).filter((move) => moves[move].from.includes(status))

/** The status after `move`, or null when the move is not open from `status`. */
export const apply = (status: ApplicationStatus, move: Move): ApplicationStatus | null =>
  moves[move].from.includes(status) ? moves[move].to : null
