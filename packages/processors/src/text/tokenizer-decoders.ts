// tokenizer.json's decoders as HF's Rust library runs them (tokenizers/src/decoders/*.rs), for the
// JavaScript backend: @huggingface/tokenizers 0.2 decodes otherwise in three places the comparison
// test found (Metaspace ignores prepend_scheme "never", ByteFallback decodes a broken byte run as
// TextDecoder does, ByteLevel turns a character outside its byte map into U+0000). Only the decoders
// below are run; tokenizer-js.ts refuses a tokenizer.json with any other.

type Json = Record<string, unknown>;

/** Applies one decoder's decode_chain to the tokens. */
type Chain = (tokens: string[]) => string[];

/** The decoder types implemented here (and so accepted by the JS backend). */
export const DECODER_TYPES = ['ByteLevel', 'Metaspace', 'ByteFallback', 'Fuse', 'Strip', 'Replace', 'Sequence'] as const;

/** Why this decoder cannot be run here, or undefined when it can. */
export function unsupportedDecoder(decoder: unknown): string | undefined {
  if (decoder === null || decoder === undefined) return undefined;
  const d = decoder as Json;
  if (!(DECODER_TYPES as readonly unknown[]).includes(d.type)) return `the decoder ${JSON.stringify(d.type)}`;
  if (d.type === 'Replace' && typeof (d.pattern as Json | undefined)?.String !== 'string') return 'a Replace decoder with a regex pattern';
  if (d.type === 'Strip' && (typeof d.content !== 'string' || [...(d.content as string)].length !== 1))
    return 'a Strip decoder without one character';
  if (d.type === 'Sequence') {
    if (!Array.isArray(d.decoders)) return 'a Sequence decoder without decoders';
    for (const child of d.decoders) {
      const why = unsupportedDecoder(child);
      if (why !== undefined) return why;
    }
  }
  return undefined;
}

/** The tokens' text as Rust's Tokenizer::decode makes it from them (special tokens already dropped). */
export function decodeTokens(decoder: unknown, tokens: string[]): string {
  if (decoder === null || decoder === undefined) return tokens.join(' ');
  return chain(decoder as Json)(tokens).join('');
}

function chain(d: Json): Chain {
  switch (d.type) {
    case 'ByteLevel':
      return (tokens) => [utf8Lossy(tokens.flatMap(byteLevelBytes))];
    case 'Metaspace': {
      const replacement = typeof d.replacement === 'string' ? d.replacement : '\u2581';
      // decoders/metaspace.rs: on the first token every replacement goes, unless prepend_scheme is "never".
      const dropFirst = d.prepend_scheme !== 'never' && d.add_prefix_space !== false;
      return (tokens) =>
        tokens.map((t, i) => [...t].flatMap((c) => (c !== replacement ? [c] : i === 0 && dropFirst ? [] : [' '])).join(''));
    }
    case 'ByteFallback':
      return byteFallback;
    case 'Fuse':
      return (tokens) => [tokens.join('')];
    case 'Strip': {
      const content = d.content as string;
      const start = Number(d.start ?? 0);
      const stop = Number(d.stop ?? 0);
      return (tokens) => tokens.map((t) => strip([...t], content, start, stop).join(''));
    }
    case 'Replace': {
      const pattern = (d.pattern as Json).String as string;
      const content = typeof d.content === 'string' ? d.content : '';
      return (tokens) => tokens.map((t) => t.replaceAll(pattern, content));
    }
    case 'Sequence': {
      const steps = (d.decoders as Json[]).map(chain);
      return (tokens) => steps.reduce((acc, step) => step(acc), tokens);
    }
    default:
      throw new Error(`decoder ${JSON.stringify(d.type)} is not implemented`);
  }
}

/** decoders/strip.rs: up to `start` leading and `stop` trailing `content` characters removed. */
function strip(chars: string[], content: string, start: number, stop: number): string[] {
  let from = 0;
  while (from < Math.min(start, chars.length) && chars[from] === content) from++;
  let to = chars.length;
  for (let i = 0; i < stop && to > from && chars[to - 1] === content; i++) to--;
  return chars.slice(from, to);
}

/** decoders/byte_fallback.rs: a run of <0xXX> tokens becomes its text, or one U+FFFD per byte when it is not UTF-8. */
function byteFallback(tokens: string[]): string[] {
  const out: string[] = [];
  let run: number[] = [];
  const flush = () => {
    if (run.length === 0) return;
    try {
      out.push(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(run)));
    } catch {
      for (let i = 0; i < run.length; i++) out.push('\uFFFD');
    }
    run = [];
  };
  for (const t of tokens) {
    const byte = /^<0x[0-9A-Fa-f]{2}>$/.test(t) ? Number.parseInt(t.slice(3, 5), 16) : undefined;
    if (byte !== undefined) run.push(byte);
    else {
      flush();
      out.push(t);
    }
  }
  flush();
  return out;
}

/** GPT-2's byte <-> printable character table (pre_tokenizers/byte_level.rs bytes_char). */
const CHAR_BYTES: ReadonlyMap<string, number> = (() => {
  const bytes: number[] = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const chars = [...bytes];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + n++);
    }
  }
  return new Map(bytes.map((b, i) => [String.fromCodePoint(chars[i]!), b]));
})();

/** byte_level.rs decode_chain: a token's characters as bytes, or its own UTF-8 when one is outside the table. */
function byteLevelBytes(token: string): number[] {
  const out: number[] = [];
  for (const c of token) {
    const b = CHAR_BYTES.get(c);
    if (b === undefined) return [...new TextEncoder().encode(token)];
    out.push(b);
  }
  return out;
}

/** String::from_utf8_lossy: WHATWG's decoder replaces the same maximal invalid subsequences. */
function utf8Lossy(bytes: number[]): string {
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(Uint8Array.from(bytes));
}
