/**
 * FixedStatement runs the text and parameters its template would make, whatever the values: compiled with the values
 * written in (the template as `sql` runs it on every call) and compiled once over slots, then given the values, the two
 * agree, for records (`sql.insert`), nested fragments and a slot used twice; a template with a value that is not a
 * slot is refused when it is made. The statements it serves run against the database in every payment test.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, type Statement } from "effect/sql"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as FixedStatement from "../src/database/FixedStatement.ts"

// Compiling needs the client's compiler only: a client that never connects.
const sql = Effect.runSync(
  SqlClient.make({
    acquirer: Effect.die(new Error("FixedStatement.test: no connection")),
    compiler: PgClient.makeCompiler(undefined, false),
    driver: "test",
    spanAttributes: []
  }).pipe(Effect.provide(Reactivity.layer))
)

const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.constant(null),
  fc.date({ noInvalidDate: true }),
  fc.array(fc.string(), { maxLength: 3 })
)

const names = ["id", "amount", "note", "at"] as const
type Values = Readonly<Record<(typeof names)[number], unknown>>

const templates: Record<string, (values: Values) => Statement.Statement<unknown>> = {
  insert: (values) => sql`INSERT INTO t ${sql.insert(values)} ON CONFLICT (id) DO NOTHING RETURNING id`,
  nested: (values) => {
    const inner = sql`(SELECT count(*) FROM u WHERE u.id = ${values.id} AND u.at < ${values.at})`
    return sql`SELECT ${inner} AS n, ${values.note} AS note FROM t WHERE amount IN (${values.amount}, ${values.amount})`
  },
  twice: (values) => sql`UPDATE t SET at = ${values.at}, seen = ${values.at} WHERE id = ${values.id}`
}

describe("FixedStatement", () => {
  it("makes the text and parameters its template makes with the values written in", () => {
    for (const [name, template] of Object.entries(templates)) {
      const fixed = FixedStatement.make(sql, names, template)
      fc.assert(
        fc.property(fc.record({ id: value, amount: value, note: value, at: value }), (values) => {
          expect(fixed(values).compile(), name).toEqual(template(values).compile())
        })
      )
    }
  })

  it("refuses a template with a value that is not one of its slots", () => {
    expect(() =>
      FixedStatement.make(sql, ["id"], (values) => sql`SELECT * FROM t WHERE id = ${values.id} AND n = ${1}`)
    ).toThrow(/not one of its slots/)
  })
})
