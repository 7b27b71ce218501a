import { ProcessorError } from '../errors.js';

/**
 * The tokenizer classes HF 5.17 has build their own Rust tokenizer in `__init__` from tokenizer.json's
 * vocabulary and merges alone (TokenizersBackend.convert_to_native_format): the class's model options,
 * normalizer, pre-tokenizer and decoder replace tokenizer.json's; its post-processor and padding stay;
 * its added tokens are added again afterwards (`addedTokens`). One entry per class, read from
 * transformers/models/<name>/tokenization_<name>.py.
 */
interface RebuiltClass {
  /** The class's defaults for the named special tokens (its __init__ keyword defaults). */
  defaults: Partial<Record<'unk_token' | 'bos_token' | 'eos_token' | 'pad_token', string>>;
  /** The class adds every special token again as a plain special AddedToken after TokenizersBackend.__init__. */
  addsSpecialTokensAgain?: true;
  /** tokenizer.json's parts as the class builds them; `addPrefixSpace` is tokenizer_config.json's value. */
  build(model: Record<string, unknown>, addPrefixSpace: unknown, raw: Record<string, unknown>): RebuiltParts;
}

interface RebuiltParts {
  model: Record<string, unknown>;
  normalizer: unknown;
  pre_tokenizer: unknown;
  decoder: unknown;
}

const byteLevel = (addPrefixSpace: boolean, useRegex = true) => ({
  type: 'ByteLevel',
  add_prefix_space: addPrefixSpace,
  trim_offsets: true,
  use_regex: useRegex,
});

/** BPE options every rebuilt class sets (`tokenizers.models.BPE(...)` keyword defaults otherwise). */
const bpe = (model: Record<string, unknown>, options: Record<string, unknown>) => ({
  type: 'BPE',
  dropout: null,
  unk_token: null,
  continuing_subword_prefix: null,
  end_of_word_suffix: null,
  fuse_unk: false,
  byte_fallback: false,
  ignore_merges: false,
  vocab: model.vocab,
  merges: model.merges,
  ...options,
});

/** transformers/models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX. */
const QWEN2_PRETOKENIZE_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// HF: GPT2Tokenizer.__init__.
const GPT2: RebuiltClass = {
  defaults: { unk_token: '<|endoftext|>', bos_token: '<|endoftext|>', eos_token: '<|endoftext|>' },
  build: (model, addPrefixSpace) => ({
    model: bpe(model, { continuing_subword_prefix: '', end_of_word_suffix: '' }),
    normalizer: null,
    pre_tokenizer: byteLevel(addPrefixSpace === true),
    decoder: byteLevel(true),
  }),
};

// HF: Qwen2Tokenizer.__init__.
const QWEN2: RebuiltClass = {
  defaults: { unk_token: '<|endoftext|>', eos_token: '<|endoftext|>', pad_token: '<|endoftext|>' },
  addsSpecialTokensAgain: true,
  build: (model, addPrefixSpace) => ({
    model: bpe(model, { continuing_subword_prefix: '', end_of_word_suffix: '' }),
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_PRETOKENIZE_REGEX }, behavior: 'Isolated', invert: false },
        byteLevel(addPrefixSpace === true, false),
      ],
    },
    decoder: byteLevel(true),
  }),
};

// HF: LlamaTokenizer.__init__ (add_prefix_space defaults to true; `legacy` false gives prepend "first").
const LLAMA: RebuiltClass = {
  defaults: { unk_token: '<unk>', bos_token: '<s>', eos_token: '</s>' },
  build: (model, addPrefixSpace, raw) => {
    const prefix = addPrefixSpace === undefined || addPrefixSpace === null ? true : addPrefixSpace === true;
    const legacy = raw.legacy === undefined ? false : raw.legacy === true;
    const decoders: unknown[] = [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }];
    if (prefix) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });
    return {
      model: bpe(model, { fuse_unk: true, byte_fallback: true }),
      normalizer: null,
      pre_tokenizer: {
        type: 'Metaspace',
        replacement: '▁',
        prepend_scheme: prefix ? (legacy ? 'always' : 'first') : 'never',
        split: false,
      },
      decoder: { type: 'Sequence', decoders },
    };
  },
};

/** tokenizer_config.json `tokenizer_class` -> how HF 5.17 builds it; null: tokenizer.json as it is (TokenizersBackend). */
const TOKENIZER_CLASSES: Readonly<Record<string, RebuiltClass | null>> = {
  TokenizersBackend: null,
  PreTrainedTokenizerFast: null,
  GPT2Tokenizer: GPT2,
  GPT2TokenizerFast: GPT2,
  Qwen2Tokenizer: QWEN2,
  Qwen2TokenizerFast: QWEN2,
  LlamaTokenizer: LLAMA,
  LlamaTokenizerFast: LLAMA,
};

/**
 * HF 5.17 AutoTokenizer for the config.json `model_type`s vlmkit reads: the class registered for the
 * type (TOKENIZER_MAPPING_NAMES; null when none is) and whether the hub's tokenizer_class is known to be
 * wrong for it (MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS).
 */
const MODEL_TYPES: Readonly<Record<string, { registered: string | null; hubClassWrong?: true }>> = {
  granite4_vision: { registered: null },
  ernie4_5_vl_moe: { registered: null },
  ernie4_5_moe_vl: { registered: null },
  granite: { registered: 'TokenizersBackend' },
  granitemoehybrid: { registered: 'TokenizersBackend' },
  llava_next: { registered: 'TokenizersBackend', hubClassWrong: true },
  llama: { registered: null },
  gpt2: { registered: 'GPT2Tokenizer' },
  qwen2: { registered: 'Qwen2Tokenizer', hubClassWrong: true },
  qwen2_vl: { registered: 'Qwen2Tokenizer' },
  qwen2_5_vl: { registered: 'Qwen2Tokenizer' },
  qwen3_vl: { registered: 'Qwen2Tokenizer' },
  qwen3_vl_moe: { registered: 'Qwen2Tokenizer' },
};

const AS_IS_CLASSES = ['TokenizersBackend', 'PreTrainedTokenizerFast'];

/**
 * The class HF 5.17's AutoTokenizer.from_pretrained builds for a folder (models/auto/tokenization_auto.py):
 * tokenizer_config.json's `tokenizer_class`, else config.json's; a model type registered with another
 * class overrides it when the registered one is TokenizersBackend or the hub's is known wrong; without
 * any, the model type's registered class or TokenizersBackend.
 */
export function resolveTokenizerClass(tokenizerConfig: Record<string, unknown>, modelConfig: Record<string, unknown>): string {
  const name = (v: unknown, file: string): string | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string')
      throw new ProcessorError('TOKENIZER_ERROR', `${file} tokenizer_class must be a string, not ${JSON.stringify(v)}.`);
    return v;
  };
  const hub = name(tokenizerConfig.tokenizer_class, 'tokenizer_config.json') ?? name(modelConfig.tokenizer_class, 'config.json');
  const modelType = modelConfig.model_type;
  let registered: string | null = null;
  let hubClassWrong = false;
  if (typeof modelType === 'string' && modelType !== '') {
    const entry = MODEL_TYPES[modelType];
    if (entry === undefined) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `config.json model_type ${JSON.stringify(modelType)}: HF 5.17 picks the tokenizer class by model type, and vlmkit ` +
          `knows that choice only for ${Object.keys(MODEL_TYPES).join(', ')}; use one of those model types.`,
      );
    }
    registered = entry.registered;
    hubClassWrong = entry.hubClassWrong === true;
  }
  const base = (c: string) => c.replace(/Fast$/, '');
  if (hub !== undefined && registered !== null && base(registered) !== base(hub)) {
    if (AS_IS_CLASSES.includes(registered)) return 'TokenizersBackend';
    return hubClassWrong ? registered : hub;
  }
  return hub ?? registered ?? 'TokenizersBackend';
}

/**
 * tokenizer.json rebuilt as HF 5.17 builds tokenizer class `cls` from it (unchanged for TokenizersBackend),
 * without its added tokens: HF adds those again afterwards, see `addedTokens`. Throws TOKENIZER_ERROR
 * naming a class that vlmkit does not rebuild.
 */
export function rebuildTokenizerJson(
  json: Record<string, unknown>,
  cls: string,
  tokenizerConfig: Record<string, unknown>,
): { json: Record<string, unknown>; rebuilt: RebuiltClass | null } {
  const rebuilt = TOKENIZER_CLASSES[cls];
  if (rebuilt === undefined || !Object.hasOwn(TOKENIZER_CLASSES, cls)) {
    throw new ProcessorError(
      'TOKENIZER_ERROR',
      `tokenizer_config.json sets tokenizer_class ${JSON.stringify(cls)}: HF 5.17 then rebuilds the tokenizer with that ` +
        "class's own model options, normalizer and pre-tokenizer, which vlmkit reproduces only for " +
        `${Object.keys(TOKENIZER_CLASSES).join(', ')} (set "tokenizer_class": "TokenizersBackend" to use tokenizer.json as it is).`,
    );
  }
  if (rebuilt === null) return { json, rebuilt };
  const model = json.model as Record<string, unknown> | undefined;
  if (model?.type !== 'BPE') {
    throw new ProcessorError(
      'TOKENIZER_ERROR',
      `tokenizer_class ${cls} builds a BPE tokenizer from tokenizer.json's vocabulary, but tokenizer.json's model is ` +
        `${JSON.stringify(model?.type ?? null)}; vlmkit does not reproduce what HF makes of it.`,
    );
  }
  return { json: { ...json, ...rebuilt.build(model, tokenizerConfig.add_prefix_space, tokenizerConfig), added_tokens: [] }, rebuilt };
}

/** A tokenizer.json `added_tokens` entry. */
interface AddedTokenJson {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** Python `tokenizers.AddedToken(**fields)`: normalized defaults to not special. */
function addedToken(fields: Record<string, unknown>): Omit<AddedTokenJson, 'id'> | undefined {
  if (typeof fields.content !== 'string') return undefined;
  const special = fields.special === true;
  return {
    content: fields.content,
    single_word: fields.single_word === true,
    lstrip: fields.lstrip === true,
    rstrip: fields.rstrip === true,
    normalized: typeof fields.normalized === 'boolean' ? fields.normalized : !special,
    special,
  };
}

/**
 * The added tokens of a rebuilt tokenizer in the order HF 5.17 adds them (TokenizersBackend.__init__):
 * tokenizer_config.json's `added_tokens_decoder` (else tokenizer.json's `added_tokens`) by id, then the
 * special tokens that are not among them (named ones first, then model-specific, then the extra list),
 * each with the id `tokenizers` gives it: its vocabulary id, else the next one after the vocabulary.
 */
export function rebuiltAddedTokens(
  json: Record<string, unknown>,
  raw: Record<string, unknown>,
  specialTokens: readonly string[],
  options: ReadonlyMap<string, Record<string, unknown>>,
  rebuilt: RebuiltClass,
): AddedTokenJson[] {
  const listed: [number, Omit<AddedTokenJson, 'id'>][] = [];
  const decoder = raw.added_tokens_decoder;
  if (decoder !== null && typeof decoder === 'object' && !Array.isArray(decoder)) {
    for (const [id, t] of Object.entries(decoder)) {
      const token = t !== null && typeof t === 'object' ? addedToken(t as Record<string, unknown>) : undefined;
      if (token !== undefined) listed.push([Number(id), token]);
    }
  } else {
    for (const t of (json.added_tokens ?? []) as Record<string, unknown>[]) {
      const token = addedToken(t);
      if (token !== undefined) listed.push([Number(t.id), token]);
    }
  }
  listed.sort((a, b) => a[0] - b[0]);
  const byContent = new Map(listed.map(([, t]) => [t.content, t]));
  const tokens = listed.map(([, t]) => t);
  for (const s of specialTokens) {
    // A string becomes AddedToken(s, special=True); a serialized one keeps its options, special set.
    const token = addedToken({ ...options.get(s), content: s, special: true });
    if (!byContent.has(s) && token !== undefined) tokens.push(token);
  }
  const vocab = ((json.model as { vocab?: Record<string, number> }).vocab ?? {}) as Record<string, number>;
  const vocabSize = Object.keys(vocab).length;
  if (rebuilt.addsSpecialTokensAgain) {
    for (const s of specialTokens)
      tokens.push({ content: s, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  }
  const out: AddedTokenJson[] = [];
  const seen = new Map<string, AddedTokenJson>();
  let maxAdded: number | undefined;
  for (const t of tokens) {
    // tokenizers AddedVocabulary::add_tokens: an empty content is skipped, one added already keeps its id
    // and takes the new options.
    if (t.content === '') continue;
    const before = seen.get(t.content);
    if (before !== undefined) {
      Object.assign(before, t);
      continue;
    }
    let id = Object.hasOwn(vocab, t.content) ? vocab[t.content] : undefined;
    if (id === undefined) id = maxAdded === undefined ? vocabSize : maxAdded >= vocabSize || vocabSize === 0 ? maxAdded + 1 : vocabSize;
    maxAdded = maxAdded === undefined ? id : Math.max(maxAdded, id);
    const entry = { id, ...t };
    seen.set(t.content, entry);
    out.push(entry);
  }
  return out;
}

/**
 * tokenizer.json kept as it is (TokenizersBackend) with tokenizer_config.json's `added_tokens_decoder`
 * applied as HF 5.17 applies it: TokenizersBackend.__init__ adds those tokens again, and `tokenizers`
 * gives a token it has already the new options (same id, still special if it was). Returns whether anything changed; a token
 * tokenizer.json does not have (HF would add it at a new id) is refused by name.
 */
export function applyAddedTokensDecoder(json: Record<string, unknown>, raw: Record<string, unknown>): boolean {
  const decoder = raw.added_tokens_decoder;
  if (decoder === null || typeof decoder !== 'object' || Array.isArray(decoder)) return false;
  const present = new Map(((json.added_tokens ?? []) as Record<string, unknown>[]).map((t) => [t.content, t]));
  let changed = false;
  for (const [id, entry] of Object.entries(decoder)) {
    const token = entry !== null && typeof entry === 'object' ? addedToken(entry as Record<string, unknown>) : undefined;
    if (token === undefined) continue;
    const before = present.get(token.content);
    if (before === undefined) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `tokenizer_config.json added_tokens_decoder has ${JSON.stringify(token.content)} (id ${id}), which is not an added ` +
          "token of tokenizer.json: HF 5.17 would add it, vlmkit does not; add it to tokenizer.json's added_tokens.",
      );
    }
    // `tokenizers` keeps a token it added as special in its special set (skipped by decode) whatever
    // the options given later say.
    token.special ||= before.special === true;
    for (const [k, v] of Object.entries(token)) {
      if (before[k] !== v) {
        before[k] = v;
        changed = true;
      }
    }
  }
  return changed;
}

export type { RebuiltClass };
