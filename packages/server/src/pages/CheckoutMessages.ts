/**
 * What the hosted checkout says, in the payment's `locale` (issue 22 §4): one table per language, English for any
 * language without one. Only the language part of `ll-CC` picks the table (nl-BE reads Dutch); amounts keep the full
 * locale (CheckoutPage formats them). Every table has every key, so a missing translation is a type error.
 */
import type { Payment } from "@kassa/core"

export interface CheckoutMessages {
  readonly testMode: string
  readonly checkout: string
  /** The application the customer pays, in the summary. */
  readonly shop: string
  readonly order: string
  readonly method: string
  readonly payment: string
  readonly name: string
  readonly emailOptional: string
  readonly phoneOptional: string
  readonly paymentMethod: string
  readonly pay: string
  readonly fail: string
  readonly expire: string
  /** The simulator's notice; `{pay}` and `{fail}` are the buttons' names, shown in bold. */
  readonly simulatorNotice: string
  readonly backToShop: string
  readonly status: Readonly<Record<Payment.PaymentStatus, string>>
  readonly completedAtProvider: string
  readonly providerNotConfirmed: string
  readonly unavailableTitle: string
  readonly unavailableText: string
  readonly notFoundTitle: string
  readonly notFoundText: string
  readonly refusedTitle: string
  readonly refusedText: string
  readonly chooseOutcome: string
  readonly busy: string
  readonly nameMissing: string
  readonly nameTooLong: string
  readonly nameControl: string
  readonly emailInvalid: string
  readonly phoneInvalid: string
}

const en: CheckoutMessages = {
  testMode: "Test mode",
  checkout: "Checkout",
  shop: "Shop",
  order: "Order",
  method: "Method",
  payment: "Payment",
  name: "Name",
  emailOptional: "E-mail (optional)",
  phoneOptional: "Phone (optional)",
  paymentMethod: "Payment method",
  pay: "Pay",
  fail: "Fail",
  expire: "Let it expire",
  simulatorNotice:
    "This is the test-mode simulator: no money moves. {pay} and {fail} record the details above as the payer.",
  backToShop: "Back to the shop",
  status: {
    pending: "Waiting for payment",
    paid: "Paid",
    failed: "Payment failed",
    cancelled: "Cancelled by the shop",
    expired: "Expired",
    partially_refunded: "Paid (partly refunded)",
    refunded: "Refunded"
  },
  completedAtProvider: "This payment is completed at the payment provider.",
  providerNotConfirmed: "The payment provider has not confirmed this payment yet. Reload this page in a moment.",
  unavailableTitle: "This payment cannot be paid now",
  unavailableText:
    "The shop cannot take payments at the moment, so nothing was paid or recorded. Please contact the shop.",
  notFoundTitle: "Payment not found",
  notFoundText: "Check the link the shop gave you.",
  refusedTitle: "This request was refused",
  refusedText:
    "The form was not sent from this checkout page, or the page is too old. Open the payment link again and retry.",
  chooseOutcome: "Choose Pay, Fail or Let it expire.",
  busy: "The payment is being updated right now. Please try again in a moment.",
  nameMissing: "Enter the payer's name.",
  nameTooLong: "At most 255 characters.",
  nameControl: "Remove the control characters.",
  emailInvalid: "Enter an e-mail address, or leave it empty.",
  phoneInvalid: "Digits, spaces and a leading + only."
}

const nl: CheckoutMessages = {
  testMode: "Testmodus",
  checkout: "Afrekenen",
  shop: "Winkel",
  order: "Bestelling",
  method: "Methode",
  payment: "Betaling",
  name: "Naam",
  emailOptional: "E-mail (optioneel)",
  phoneOptional: "Telefoon (optioneel)",
  paymentMethod: "Betaalmethode",
  pay: "Betalen",
  fail: "Laten mislukken",
  expire: "Laten verlopen",
  simulatorNotice:
    "Dit is de simulator van de testmodus: er wordt geen geld overgemaakt. {pay} en {fail} leggen de gegevens hierboven vast als betaler.",
  backToShop: "Terug naar de winkel",
  status: {
    pending: "Wacht op betaling",
    paid: "Betaald",
    failed: "Betaling mislukt",
    cancelled: "Geannuleerd door de winkel",
    expired: "Verlopen",
    partially_refunded: "Betaald (deels terugbetaald)",
    refunded: "Terugbetaald"
  },
  completedAtProvider: "Deze betaling wordt afgerond bij de betaalprovider.",
  providerNotConfirmed: "De betaalprovider heeft deze betaling nog niet bevestigd. Laad deze pagina zo opnieuw.",
  unavailableTitle: "Deze betaling kan nu niet worden betaald",
  unavailableText:
    "De winkel kan op dit moment geen betalingen ontvangen, dus er is niets betaald of vastgelegd. Neem contact op met de winkel.",
  notFoundTitle: "Betaling niet gevonden",
  notFoundText: "Controleer de link die je van de winkel hebt gekregen.",
  refusedTitle: "Dit verzoek is geweigerd",
  refusedText:
    "Het formulier is niet vanaf deze betaalpagina verstuurd, of de pagina is te oud. Open de betaallink opnieuw en probeer het nog eens.",
  chooseOutcome: "Kies Betalen, Laten mislukken of Laten verlopen.",
  busy: "De betaling wordt op dit moment bijgewerkt. Probeer het zo nog eens.",
  nameMissing: "Vul de naam van de betaler in.",
  nameTooLong: "Maximaal 255 tekens.",
  nameControl: "Verwijder de stuurtekens.",
  emailInvalid: "Vul een e-mailadres in, of laat het leeg.",
  phoneInvalid: "Alleen cijfers, spaties en een + aan het begin."
}

const de: CheckoutMessages = {
  testMode: "Testmodus",
  checkout: "Bezahlen",
  shop: "Shop",
  order: "Bestellung",
  method: "Methode",
  payment: "Zahlung",
  name: "Name",
  emailOptional: "E-Mail (optional)",
  phoneOptional: "Telefon (optional)",
  paymentMethod: "Zahlungsart",
  pay: "Bezahlen",
  fail: "Fehlschlagen lassen",
  expire: "Ablaufen lassen",
  simulatorNotice:
    "Dies ist der Simulator des Testmodus: Es fließt kein Geld. {pay} und {fail} speichern die obigen Angaben als Zahler.",
  backToShop: "Zurück zum Shop",
  status: {
    pending: "Warten auf Zahlung",
    paid: "Bezahlt",
    failed: "Zahlung fehlgeschlagen",
    cancelled: "Vom Shop storniert",
    expired: "Abgelaufen",
    partially_refunded: "Bezahlt (teilweise erstattet)",
    refunded: "Erstattet"
  },
  completedAtProvider: "Diese Zahlung wird beim Zahlungsanbieter abgeschlossen.",
  providerNotConfirmed:
    "Der Zahlungsanbieter hat diese Zahlung noch nicht bestätigt. Laden Sie die Seite gleich noch einmal.",
  unavailableTitle: "Diese Zahlung kann jetzt nicht bezahlt werden",
  unavailableText:
    "Der Shop kann im Moment keine Zahlungen annehmen, daher wurde nichts bezahlt oder gespeichert. Bitte wenden Sie sich an den Shop.",
  notFoundTitle: "Zahlung nicht gefunden",
  notFoundText: "Prüfen Sie den Link, den Sie vom Shop erhalten haben.",
  refusedTitle: "Diese Anfrage wurde abgelehnt",
  refusedText:
    "Das Formular wurde nicht von dieser Zahlungsseite gesendet, oder die Seite ist zu alt. Öffnen Sie den Zahlungslink erneut und versuchen Sie es noch einmal.",
  chooseOutcome: "Wählen Sie Bezahlen, Fehlschlagen lassen oder Ablaufen lassen.",
  busy: "Die Zahlung wird gerade aktualisiert. Bitte versuchen Sie es gleich noch einmal.",
  nameMissing: "Geben Sie den Namen des Zahlers ein.",
  nameTooLong: "Höchstens 255 Zeichen.",
  nameControl: "Entfernen Sie die Steuerzeichen.",
  emailInvalid: "Geben Sie eine E-Mail-Adresse ein oder lassen Sie das Feld leer.",
  phoneInvalid: "Nur Ziffern, Leerzeichen und ein + am Anfang."
}

const fr: CheckoutMessages = {
  testMode: "Mode test",
  checkout: "Paiement",
  shop: "Boutique",
  order: "Commande",
  method: "Moyen",
  payment: "Paiement",
  name: "Nom",
  emailOptional: "E-mail (facultatif)",
  phoneOptional: "Téléphone (facultatif)",
  paymentMethod: "Moyen de paiement",
  pay: "Payer",
  fail: "Faire échouer",
  expire: "Laisser expirer",
  simulatorNotice:
    "Ceci est le simulateur du mode test : aucun argent n'est transféré. {pay} et {fail} enregistrent les informations ci-dessus comme payeur.",
  backToShop: "Retour à la boutique",
  status: {
    pending: "En attente de paiement",
    paid: "Payé",
    failed: "Paiement échoué",
    cancelled: "Annulé par la boutique",
    expired: "Expiré",
    partially_refunded: "Payé (partiellement remboursé)",
    refunded: "Remboursé"
  },
  completedAtProvider: "Ce paiement se termine chez le prestataire de paiement.",
  providerNotConfirmed:
    "Le prestataire de paiement n'a pas encore confirmé ce paiement. Rechargez cette page dans un instant.",
  unavailableTitle: "Ce paiement ne peut pas être réglé pour le moment",
  unavailableText:
    "La boutique ne peut pas accepter de paiements pour le moment : rien n'a été payé ni enregistré. Veuillez contacter la boutique.",
  notFoundTitle: "Paiement introuvable",
  notFoundText: "Vérifiez le lien que la boutique vous a donné.",
  refusedTitle: "Cette requête a été refusée",
  refusedText:
    "Le formulaire n'a pas été envoyé depuis cette page de paiement, ou la page est trop ancienne. Rouvrez le lien de paiement et réessayez.",
  chooseOutcome: "Choisissez Payer, Faire échouer ou Laisser expirer.",
  busy: "Le paiement est en cours de mise à jour. Réessayez dans un instant.",
  nameMissing: "Saisissez le nom du payeur.",
  nameTooLong: "255 caractères au maximum.",
  nameControl: "Supprimez les caractères de contrôle.",
  emailInvalid: "Saisissez une adresse e-mail, ou laissez le champ vide.",
  phoneInvalid: "Chiffres, espaces et un + initial uniquement."
}

const tables: Readonly<Record<string, CheckoutMessages>> = { en, nl, de, fr }

/** The languages the checkout speaks. */
export const languages: ReadonlyArray<string> = Object.keys(tables)

/**
 * The messages for a locale, and the `lang` of the page that shows them: the locale itself when its language has a
 * table, `en` when the page falls back to English (so a screen reader does not read English with Spanish rules).
 */
export const forLocale = (
  locale: string | undefined
): { readonly lang: string; readonly messages: CheckoutMessages } => {
  const language = (locale ?? "en").split("-")[0] ?? "en"
  const table = Object.hasOwn(tables, language) ? tables[language] : undefined
  return table === undefined || locale === undefined ? { lang: "en", messages: en } : { lang: locale, messages: table }
}
