/**
 * What the merchant payment endpoint tests (PaymentsCreateAndRead, PaymentsTransitions) share beyond
 * PaymentFixtures.ts: the shapes a payment's ids and instants take on the wire.
 */

/** A payment's or a refund's id on the wire. */
export const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** An instant on the wire: ISO 8601, UTC, milliseconds. */
export const timestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
