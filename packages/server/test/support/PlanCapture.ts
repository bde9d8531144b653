/**
 * The query plans of the statements an effect runs (issue 11 §4): each read the effect sends is first explained,
 * on the same connection, through `effect/sql`'s statement transformer. Used by test/QueryPlans.test.ts (plans with
 * `enable_seqscan = off`: an index can serve the query) and bench/scale.ts (`EXPLAIN ANALYZE` timings).
 */
import { Effect } from "effect"
import { SqlClient, Statement } from "effect/sql"

export interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

export interface Explained {
  readonly sql: string
  readonly plan: PlanNode
  /** `EXPLAIN ANALYZE` only. */
  readonly executionMs?: number | undefined
}

/** Every node of a plan, depth first. */
export const nodes = (plan: PlanNode): ReadonlyArray<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

/** The indexes a plan reads. */
export const indexesOf = (plan: PlanNode) =>
  nodes(plan).flatMap((node) => (node["Index Name"] === undefined ? [] : [node["Index Name"]]))

/** The tables a plan reads whole. */
export const seqScansOf = (plan: PlanNode) =>
  nodes(plan).flatMap((node) =>
    node["Node Type"] === "Seq Scan" && node["Relation Name"] !== undefined ? [node["Relation Name"]] : []
  )

// Reads only: writes are never explained (EXPLAIN ANALYZE would run them twice), nor a locking read under ANALYZE.
const isRead = (text: string, analyze: boolean) => {
  const head = text.trimStart().slice(0, 7).toUpperCase()
  return (head.startsWith("SELECT") || head.startsWith("(SELECT")) && !(analyze && /FOR UPDATE/i.test(text))
}

/**
 * Runs `effect` in one transaction (so one connection) with `settings` (e.g. `enable_seqscan = off`) and explains
 * each read it sends before sending it; answers its result and the plans, in order.
 */
export const capturePlans = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly analyze?: boolean; readonly settings?: ReadonlyArray<string> } = {}
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const plans: Array<Explained> = []
    const analyze = options.analyze === true
    const transformer: Statement.Transformer = (self, statement) => {
      const [text, params] = self.compile()
      if (!isRead(text, analyze)) return Effect.succeed(self)
      return statement
        .unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON${analyze ? ", ANALYZE" : ""}) ${text}`, params)
        .pipe(
          Effect.map((rows) => {
            const raw = rows[0]?.["QUERY PLAN"]
            const [explained] = (typeof raw === "string" ? JSON.parse(raw) : raw) as ReadonlyArray<{
              readonly Plan: PlanNode
              readonly "Execution Time"?: number
            }>
            if (explained !== undefined)
              plans.push({ sql: text, plan: explained.Plan, executionMs: explained["Execution Time"] })
            return self
          }),
          Effect.provideService(Statement.CurrentTransformer, undefined),
          Effect.orDie
        )
    }
    const result = yield* sql.withTransaction(
      Effect.gen(function* () {
        for (const setting of options.settings ?? []) yield* sql.unsafe(`SET LOCAL ${setting}`)
        return yield* effect.pipe(Effect.provideService(Statement.CurrentTransformer, transformer))
      })
    )
    return { result, plans }
  })
