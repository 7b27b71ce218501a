// tokenizer.json run by `@huggingface/tokenizers` (pure JavaScript: the browser's tokenizer). It is a
// re-implementation of HF's Rust library, not the library itself, so what it does not reproduce is
// refused here by name (unsupportedByJs) rather than tokenized differently: a wrong id that runs
// is worse than an error. tokenizer-backends.test.ts compares it with the Rust library on every fixture.
import { Tokenizer as JsTokenizer } from '@huggingface/tokenizers';
import { ProcessorError } from '../errors.js';
import type { TokenizerBackend, TokenizerBackendFactory } from './tokenizer-backend.js';
import { decodeTokens, unsupportedDecoder } from './tokenizer-decoders.js';

type Json = Record<string, unknown>;

/** The pure JavaScript backend (`@huggingface/tokenizers` 0.2): the browser default, usable in Node too. */
export const jsTokenizerBackend: TokenizerBackendFactory = (tokenizer, specialTokens) => {
  const json = structuredClone(tokenizer.json);
  const why = unsupportedByJs(json);
  if (why !== undefined) {
    throw new ProcessorError(
      'TOKENIZER_ERROR',
      `tokenizer.json: ${why}, which @huggingface/tokenizers (the browser's tokenizer) does not run as HF's Rust ` +
        'library does; this tokenizer is refused rather than given other ids (see the README of @vlmkit/processors).',
    );
  }
  json.added_tokens = [...addedTokens(json), ...newSpecialTokens(json, specialTokens)];
  let js: JsTokenizer;
  try {
    // clean_up_tokenization_spaces: the JS library's default is on; Tokenizer applies HF's rule itself.
    js = new JsTokenizer(json, { clean_up_tokenization_spaces: false });
  } catch (e) {
    throw new ProcessorError('TOKENIZER_ERROR', `tokenizer.json could not be loaded: ${(e as Error).message}`, { cause: e });
  }
  dropUnknownCharacters(js, json.model as Json);
  const special = new Set(addedTokens(json).flatMap((t) => (t.special === true ? [t.content as string] : [])));
  return new JsBackend(js, json.decoder, special);
};

/**
 * models/bpe/model.rs (merge_word) builds a word from the characters it has ids for: a character out of
 * the vocabulary becomes its <0xXX> byte tokens (byte_fallback, when all exist), else unk_token (when
 * that has an id), else it is dropped, before merging. The JS library merges first and drops after, so
 * a merge across a dropped character differs (real byte-level vocabularies hold every byte character,
 * so it arises with small or mismatched vocabularies); such characters are dropped first here, as in Rust.
 */
function dropUnknownCharacters(js: JsTokenizer, model: Json): void {
  const vocab = new Map(Object.entries(model.vocab as Record<string, number>));
  const unk = typeof model.unk_token === 'string' && vocab.has(model.unk_token);
  if (unk) return;
  const byteFallback = model.byte_fallback === true;
  const encoder = new TextEncoder();
  const kept = (c: string) =>
    vocab.has(c) ||
    (byteFallback && [...encoder.encode(c)].every((b) => vocab.has(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)));
  const m = js.model as unknown as { encode(tokens: string[]): string[] };
  const encode = m.encode.bind(m);
  m.encode = (tokens) => encode(tokens.map((t) => [...t].filter(kept).join('')).filter((t) => t.length > 0));
}

class JsBackend implements TokenizerBackend {
  readonly library = '@huggingface/tokenizers';
  readonly #size: number;

  constructor(
    private readonly js: JsTokenizer,
    private readonly decoder: unknown,
    private readonly special: ReadonlySet<string>,
  ) {
    this.#size = js.get_vocab(true).size;
  }

  tokenToId(token: string): number | undefined {
    return this.js.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.js.id_to_token(id);
  }

  size(): number {
    return this.#size;
  }

  async encode(text: string, addSpecialTokens: boolean): Promise<number[]> {
    const { ids, tokens } = this.js.encode(text, { add_special_tokens: addSpecialTokens });
    const bad = ids.findIndex((id: unknown) => !Number.isInteger(id));
    if (bad >= 0) {
      // The Rust library drops a piece that has no id and no unk token; the JS one would give `undefined`.
      throw new ProcessorError(
        'INVALID_INPUT',
        `the text has a piece ${JSON.stringify(tokens[bad])} that tokenizer.json has no id for (and no unk_token); ` +
          'remove the characters the vocabulary cannot represent.',
      );
    }
    return ids;
  }

  /** Tokenizer::decode: ids it has no token for skipped, special tokens dropped when asked, then the decoder (Rust's). */
  async decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    const tokens: string[] = [];
    for (const id of ids) {
      const t = this.js.id_to_token(id);
      if (t !== undefined && !(skipSpecialTokens && this.special.has(t))) tokens.push(t);
    }
    return decodeTokens(this.decoder, tokens);
  }
}

function addedTokens(json: Json): Json[] {
  return Array.isArray(json.added_tokens) ? (json.added_tokens as Json[]) : [];
}

/**
 * The added tokens the Rust library's `add_special_tokens` would create (AddedVocabulary::add_tokens): a
 * token of the model's vocabulary keeps its id; a new one gets the model's vocabulary size, or one past the
 * largest added id when that is already past it. Special, not normalized, no stripping.
 */
function newSpecialTokens(json: Json, specialTokens: readonly string[]): Json[] {
  const added = addedTokens(json);
  const present = new Set(added.map((t) => t.content));
  const vocab = ((json.model as Json | undefined)?.vocab ?? {}) as Record<string, number>;
  const vocabSize = Object.keys(vocab).length;
  let maxAdded = added.reduce((m, t) => Math.max(m, typeof t.id === 'number' ? t.id : -1), -1);
  const out: Json[] = [];
  for (const content of specialTokens) {
    if (present.has(content)) continue;
    present.add(content);
    let id = Object.hasOwn(vocab, content) ? vocab[content] : undefined;
    if (id === undefined) {
      id = maxAdded < 0 ? vocabSize : maxAdded >= vocabSize || vocabSize === 0 ? maxAdded + 1 : vocabSize;
      maxAdded = Math.max(maxAdded, id);
    }
    out.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  }
  return out;
}

/**
 * What of tokenizer.json the JS library is known not to reproduce (its README, and tokenizer-backends.test.ts):
 * a model other than BPE (the only one compared here), `single_word` added tokens (ignored there), Split
 * behaviours other than Isolated / Removed, and regex constructs JavaScript lacks (\G, atomic groups,
 * possessive quantifiers). Undefined when none.
 */
export function unsupportedByJs(json: Json): string | undefined {
  const model = json.model as Json | undefined;
  if (model?.type !== 'BPE') return `the model is ${JSON.stringify(model?.type)}, and only BPE is compared with the Rust library`;
  if (model.dropout !== null && model.dropout !== undefined) return 'the BPE model has dropout';
  for (const key of ['continuing_subword_prefix', 'end_of_word_suffix'] as const) {
    if (model[key] !== null && model[key] !== undefined && model[key] !== '') return `the BPE model has a ${key}`;
  }
  const decoder = unsupportedDecoder(json.decoder);
  if (decoder !== undefined) return decoder;
  const single = addedTokens(json).find((t) => t.single_word === true);
  if (single !== undefined) return `the added token ${JSON.stringify(single.content)} is single_word`;
  for (const [where, part] of [
    ['normalizer', json.normalizer],
    ['pre_tokenizer', json.pre_tokenizer],
  ] as const) {
    const why = unsupportedPart(part, where);
    if (why !== undefined) return why;
  }
  return undefined;
}

function unsupportedPart(part: unknown, where: string): string | undefined {
  if (part === null || typeof part !== 'object') return undefined;
  const p = part as Json;
  if (p.type === 'Split' && p.behavior !== 'Isolated' && p.behavior !== 'Removed') {
    return `the ${where} splits with behavior ${JSON.stringify(p.behavior)}`;
  }
  const regex = (p.pattern as Json | undefined)?.Regex;
  if (typeof regex === 'string') {
    const construct = unsupportedRegex(regex);
    if (construct !== undefined) return `the ${where} pattern ${JSON.stringify(regex)} uses ${construct}`;
  }
  for (const list of [p.normalizers, p.pretokenizers]) {
    if (!Array.isArray(list)) continue;
    for (const child of list) {
      const why = unsupportedPart(child, where);
      if (why !== undefined) return why;
    }
  }
  return undefined;
}

/** An Oniguruma construct JavaScript has no equivalent for, outside escapes and character classes. */
export function unsupportedRegex(pattern: string): string | undefined {
  let inClass = 0;
  // Whether the item before is a quantifier: a '+' after one makes it possessive (a++, \p{L}{2}+).
  let quantified = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      if (pattern[i + 1] === 'G' && inClass === 0) return '\\G';
      i++;
      // \p{L}, \x{263a}: the braces belong to the escape.
      if (pattern[i + 1] === '{') i = Math.max(i, pattern.indexOf('}', i));
      quantified = false;
    } else if (inClass > 0) {
      if (c === '[') inClass++;
      else if (c === ']') inClass--;
      quantified = false;
    } else if (c === '[') {
      inClass = 1;
      quantified = false;
    } else if (c === '(') {
      if (pattern.startsWith('?>', i + 1)) return 'an atomic group (?>...)';
      if (pattern[i + 1] === '?') i++; // (?i: (?= (?! ...: not a quantifier
      quantified = false;
    } else if (c === '+' && quantified) {
      return 'a possessive quantifier';
    } else if (c === '{') {
      const close = pattern.indexOf('}', i);
      quantified = close > i && /^\d+(,\d*)?$/.test(pattern.slice(i + 1, close));
      if (quantified) i = close;
    } else {
      quantified = c === '*' || c === '+' || c === '?';
    }
  }
  return undefined;
}
