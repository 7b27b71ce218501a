// tokenizer.json run by `@huggingface/tokenizers` (pure JavaScript: the browser's tokenizer). It is a
// re-implementation of HF's Rust library, not the library itself, so what it does not reproduce is
// refused here by name (unsupportedByJs) rather than tokenized differently: a wrong id that runs
// is worse than an error. tokenizer-backends.test.ts compares it with the Rust library on every fixture.
import { Tokenizer as JsTokenizer } from '@huggingface/tokenizers';
import { ProcessorError } from '../errors.js';
import type { TokenizerBackend, TokenizerBackendFactory } from './tokenizer-backend.js';

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
  return new JsBackend(js);
};

class JsBackend implements TokenizerBackend {
  readonly library = '@huggingface/tokenizers';
  readonly #size: number;

  constructor(private readonly js: JsTokenizer) {
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

  async decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    // The Rust library skips ids it has no token for; the JS one would print unk_token (and throws on none).
    const known = ids.filter((id) => this.js.id_to_token(id) !== undefined);
    if (known.length === 0) return '';
    return this.js.decode(known, { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: false });
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
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      if (pattern[i + 1] === 'G' && inClass === 0) return '\\G';
      i++;
      continue;
    }
    if (c === '[') inClass++;
    else if (c === ']' && inClass > 0) inClass--;
    else if (inClass === 0) {
      if (c === '(' && pattern.startsWith('?>', i + 1)) return 'an atomic group (?>...)';
      if (c === '+' && i > 0 && '*+?}'.includes(pattern[i - 1]!) && pattern[i - 2] !== '\\') return 'a possessive quantifier';
    }
  }
  return undefined;
}
