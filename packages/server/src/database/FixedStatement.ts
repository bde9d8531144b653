/**
 * A statement whose SQL text never changes, compiled once (issue 23). effect's `sql` template builds its statement
 * again on every call — a segment per parameter, the text grown piece by piece through every fragment — and the new
 * text is a new key for the driver's prepared-statement cache to hash. On the request path that was a few per cent of
 * a create's CPU and the largest single source of its garbage.
 *
 * The statement is still written as a `sql` template, over named slots in place of its values: compiled once with
 * those slots as its parameters, it yields the text and where each slot's value goes. A call then passes the values
 * to `sql.unsafe` with that text: the same text and parameters the template makes, only not made again. A value the
 * template would have wrapped (`pg.json`) is passed wrapped (`PgTypes.jsonb`), since a slot is only a placeholder.
 */
import type { SqlClient, Statement } from "effect/sql"

/** A placeholder for one named value while the template is compiled. */
class Slot {
  readonly name: string
  constructor(name: string) {
    this.name = name
  }
}

/**
 * The statement `template` writes over `names`, compiled once; call it with each name's value. Throws at once (at
 * layer build) if a parameter of the template is not one of the slots: such a value would be fixed in the text.
 */
export const make = <const Names extends ReadonlyArray<string>, A extends object = Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  names: Names,
  template: (slots: Readonly<Record<Names[number], unknown>>) => Statement.Statement<unknown>
): ((values: Readonly<Record<Names[number], unknown>>) => Statement.Statement<A>) => {
  const slots = Object.fromEntries(names.map((name) => [name, new Slot(name)])) as Record<Names[number], Slot>
  const [text, binds] = template(slots).compile()
  const order = binds.map((bind) => {
    if (bind instanceof Slot) return bind.name as Names[number]
    throw new Error(`FixedStatement: a parameter of "${text.trim().slice(0, 60)}…" is not one of its slots`)
  })
  return (values) =>
    sql.unsafe<A>(
      text,
      order.map((name) => values[name])
    )
}
