/** Text matched literally inside a LIKE pattern, shared by every search that matches part of a value. */
import { Text } from "@kassa/core"

/** `text` with its `%`, `_` and `\` escaped (`_` is common in e-mail addresses); storable (Text.toStorable). */
export const likeLiteral = (text: string) => Text.toStorable(text).replace(/[\\%_]/g, (char) => `\\${char}`)
