/**
 * A structural pre-scan of JSON text, run before JSON.parse on headers and
 * index files. It finds the two defects JSON.parse cannot report:
 *   - nesting deeper than a limit (a parsed value nested 100k deep makes
 *     later code that walks it, JSON.stringify included, overflow the stack);
 *   - a key repeated in one object (JSON.parse keeps the last one silently,
 *     so a header could name a tensor twice and we would read one of them).
 * The scan is linear in the text and allocates only a key set per open
 * object. It does not validate the JSON; JSON.parse does that afterwards.
 */

/** serde_json's default recursion limit, which the Rust safetensors library inherits. A real header nests 3 deep. */
export const MAX_JSON_DEPTH = 128;

export type JsonDefect =
  | { kind: 'too-deep'; depth: number; offset: number }
  | { kind: 'duplicate-key'; key: string; path: string[]; offset: number };

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;

/** The first defect in `text`, or null. Strings are skipped whole (brackets inside them do not count). */
export function scanJson(text: string, maxDepth: number = MAX_JSON_DEPTH): JsonDefect | null {
  // One frame per open container: the keys seen (objects) or null (arrays), and the key that opened it.
  const keys: Array<Set<string> | null> = [];
  const path: string[] = [];
  let expectKey = false;
  let lastKey = '';
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (expectKey) {
        const raw = text.slice(i, end + 1);
        const key = decodeKey(raw);
        const seen = keys[keys.length - 1];
        if (key !== undefined && seen) {
          if (seen.has(key)) return { kind: 'duplicate-key', key, path: [...path], offset: i };
          seen.add(key);
          lastKey = key;
        }
        expectKey = false;
      }
      i = end + 1;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (keys.length >= maxDepth) return { kind: 'too-deep', depth: keys.length + 1, offset: i };
      path.push(keys.length === 0 ? '' : keys[keys.length - 1] ? lastKey : '[]');
      keys.push(c === OPEN_OBJECT ? new Set() : null);
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      keys.pop();
      path.pop();
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = keys.length > 0 && keys[keys.length - 1] !== null;
    }
    i++;
  }
  return null;
}

/** Index of the closing quote of the string starting at `start` (or the last index, for an unterminated string). */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return text.length - 1;
    let backslashes = 0;
    for (let k = q - 1; k > start && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q;
    j = q + 1;
  }
}

function decodeKey(raw: string): string | undefined {
  if (!raw.includes('\\')) return raw.slice(1, -1);
  try {
    const key: unknown = JSON.parse(raw);
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined; // not a valid string: JSON.parse will report it
  }
}

/** "a" > "b" for messages: where a duplicate key sits. */
export function showPath(path: string[]): string {
  const parts = path.slice(1).filter((p) => p !== '[]');
  return parts.length === 0 ? 'the top-level object' : `the object at ${parts.map((p) => JSON.stringify(p)).join(' > ')}`;
}
