/**
 * One way to validate a request body: decode with every issue collected and unknown keys refused,
 * then report the issues as `validation_failed` `fields` (field path → messages), all at once.
 */
import { Result, Schema, SchemaIssue } from "effect"
import { type FieldErrors, ValidationFailed } from "../errors/ApiError.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

// Schema's generic wording, said the way a merchant developer reads it.
const rephrase = (message: string): string => {
  if (message === "Expected no excess property") return "is not a known field"
  if (message === "Missing key") return "is required"
  return message
}

/**
 * An empty record for field names taken from a request: without a prototype, `__proto__`, `constructor` or
 * `toString` are ordinary keys, not Object.prototype's members (a sent `constructor` field once made
 * `fields.constructor` a function and the request a 500).
 */
export const emptyFields = <A>(): Record<string, A> => Object.create(null) as Record<string, A>

/** `fields` of a schema issue: nested paths are dotted (`customer.email`); the body itself is `body`. */
export const fieldErrors = (issue: SchemaIssue.Issue): FieldErrors => {
  const fields = emptyFields<[string, ...Array<string>]>()
  for (const { path = [], message } of formatter(issue).issues) {
    const key = path.length === 0 ? "body" : path.map(String).join(".")
    const text = path.length === 0 ? "must be a JSON object of the documented fields" : rephrase(message)
    const existing = fields[key]
    if (existing === undefined) fields[key] = [text]
    else if (!existing.includes(text)) existing.push(text)
  }
  return fields
}

/** A `validation_failed` error for the given field errors. */
export const validationFailed = (fields: FieldErrors): ValidationFailed =>
  new ValidationFailed({ message: `Invalid fields: ${Object.keys(fields).join(", ")}`, fields })

/** Decodes `input` with `schema`, refusing unknown fields and reporting every invalid field together. */
export const validate =
  <S extends Schema.Decoder<unknown>>(schema: S) =>
  (input: unknown): Result.Result<S["Type"], ValidationFailed> =>
    Schema.decodeUnknownResult(schema, { errors: "all", onExcessProperty: "error" })(input).pipe(
      Result.mapError((error) => validationFailed(fieldErrors(error.issue)))
    )
