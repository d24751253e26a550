/**
 * Characters that must never reach a name a person reads: C0 and C1 controls (terminal escapes, line breaks, NEL),
 * line and paragraph separators, bidirectional marks, embeddings, overrides and isolates, and unpaired UTF-16
 * surrogates (not text at all, and refused by DynamoDB).
 */
const UNSAFE_CHARACTERS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function hasUnsafeCharacters(text: string): boolean {
  return new RegExp(UNSAFE_CHARACTERS.source).test(text);
}

/** The text with every unsafe character written as a `\uXXXX` escape, so that printing it changes no terminal. */
export function escapeUnsafeCharacters(text: string): string {
  return text.replace(UNSAFE_CHARACTERS, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
