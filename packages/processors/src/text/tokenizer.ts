import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer as RustTokenizer } from 'tokenizers';
import { ProcessorError, type ProcessorErrorCode } from '../errors.js';
import { IncrementalDetokenizer, type IncrementalDetokenizerOptions } from './detokenizer.js';

/** HF's named special tokens (PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES). */
const NAMED_SPECIAL_TOKENS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** tokenizer_config.json as read: the fields the tokenizer and the chat template use. */
export interface TokenizerConfig {
  /**
   * HF `tokenizer.special_tokens_map`: the named special tokens (bos_token, eos_token, ...) plus the
   * model-specific ones (image_token, video_start_token, ...: any `*_token` string field and the
   * `extra_special_tokens` dict). These are also the chat template's variables.
   */
  specialTokens: Record<string, string>;
  /** `extra_special_tokens` / `additional_special_tokens` when given as a list. */
  extraSpecialTokens: string[];
  /** Set only when tokenizer_config.json says so (HF then rebuilds the post-processor from them). */
  addBosToken?: boolean;
  addEosToken?: boolean;
  /** HF v5 default false; when true, applied on decode for non-BPE models only, as HF does. */
  cleanUpTokenizationSpaces: boolean;
  /** `chat_template` from tokenizer_config.json (a string, or named templates). */
  chatTemplate?: string | Record<string, string>;
  /** The whole file, for fields this reader does not interpret. */
  raw: Record<string, unknown>;
}

/** A special token value in tokenizer_config.json: a string or a serialized AddedToken `{ content, ... }`. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return undefined;
}

/**
 * Reads tokenizer_config.json the way HF's PreTrainedTokenizerBase.__init__ / from_pretrained do
 * (transformers 5.17 tokenization_utils_base.py): named special tokens, `*_token` fields and an
 * `extra_special_tokens` dict become model-specific special tokens, a list stays "extra".
 */
export function parseTokenizerConfig(raw: Record<string, unknown>): TokenizerConfig {
  const specialTokens: Record<string, string> = {};
  const modelSpecific: Record<string, string> = {};
  let extraSpecialTokens: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if ((NAMED_SPECIAL_TOKENS as readonly string[]).includes(key)) {
      const t = tokenText(value);
      if (t !== undefined) specialTokens[key] = t;
    } else if (key === 'extra_special_tokens' || key === 'additional_special_tokens') {
      if (Array.isArray(value)) {
        extraSpecialTokens = value.map(tokenText).filter((t): t is string => t !== undefined);
      } else if (value !== null && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) {
          const t = tokenText(v);
          if (t !== undefined) modelSpecific[k] = t;
        }
      }
    } else if (key.endsWith('_token')) {
      const t = tokenText(value);
      if (t !== undefined) modelSpecific[key] = t;
    }
  }
  const cfg: TokenizerConfig = {
    specialTokens: { ...specialTokens, ...modelSpecific },
    extraSpecialTokens,
    cleanUpTokenizationSpaces: raw.clean_up_tokenization_spaces === true,
    raw,
  };
  if (typeof raw.add_bos_token === 'boolean') cfg.addBosToken = raw.add_bos_token;
  if (typeof raw.add_eos_token === 'boolean') cfg.addEosToken = raw.add_eos_token;
  const ct = raw.chat_template;
  if (typeof ct === 'string') cfg.chatTemplate = ct;
  else if (Array.isArray(ct)) {
    // Saved as [{ name, template }] (HF reconstructs a dict when loading).
    cfg.chatTemplate = Object.fromEntries(
      ct.filter((t) => typeof t?.name === 'string' && typeof t?.template === 'string').map((t) => [t.name, t.template]),
    );
  }
  return cfg;
}

export interface TokenizerEncodeOptions {
  /** Add the special tokens the tokenizer's post-processor adds (BOS, ...). Default true, as HF's `tokenizer(text)`. */
  addSpecialTokens?: boolean;
}

export interface TokenizerDecodeOptions {
  /** Drop special tokens (BOS, EOS, image placeholders, ...). Default false, as HF's `decode`. */
  skipSpecialTokens?: boolean;
}

/**
 * A tokenizer.json tokenizer run by HF's own Rust library (the `tokenizers` npm package), set up as
 * transformers 5.17's TokenizersBackend sets it up from tokenizer.json + tokenizer_config.json:
 * special tokens that are not added tokens of tokenizer.json added as special ones, padding and truncation off (what HF's processors
 * call it with), the post-processor rebuilt when tokenizer_config.json sets add_bos_token/add_eos_token.
 */
export class Tokenizer {
  /** bos/eos added around the ids when tokenizer_config.json overrides the post-processor. */
  readonly #template: { bos: number[]; eos: number[] } | undefined;
  readonly #cleanUp: boolean;

  private constructor(
    readonly backend: RustTokenizer,
    readonly config: TokenizerConfig,
    modelType: string | undefined,
    addedTokens: ReadonlySet<string>,
  ) {
    backend.disablePadding();
    backend.disableTruncation();
    // HF TokenizersBackend.__init__: special tokens of the config that are not added tokens yet become
    // special added tokens (kept whole when encoding, dropped by skipSpecialTokens), also when the
    // model's vocabulary has them as ordinary tokens (they keep that id).
    const missing = [...Object.values(config.specialTokens), ...config.extraSpecialTokens].filter((t) => !addedTokens.has(t));
    if (missing.length > 0) backend.addSpecialTokens([...new Set(missing)]);

    // HF update_post_processor: runs when tokenizer_config.json names add_bos_token/add_eos_token or
    // tokenizer.json has no post-processor; `bos:0 $A:0 eos:0` with the flags (default false).
    if (config.addBosToken !== undefined || config.addEosToken !== undefined || backend.getPostProcessor() === null) {
      const bos = config.addBosToken === true ? this.#idsOf('bos_token') : [];
      const eos = config.addEosToken === true ? this.#idsOf('eos_token') : [];
      this.#template = { bos, eos };
    }
    // HF _decode: clean_up_tokenization_spaces is ignored for BPE models (it would corrupt them).
    this.#cleanUp = config.cleanUpTokenizationSpaces && modelType !== 'BPE';
  }

  #idsOf(name: string): number[] {
    const t = this.config.specialTokens[name];
    const id = t === undefined ? null : this.backend.tokenToId(t);
    return id === null ? [] : [id];
  }

  /** From the text of tokenizer.json and the parsed tokenizer_config.json (`{}` when there is none). */
  static fromJSON(tokenizerJson: string, tokenizerConfig: Record<string, unknown> = {}): Tokenizer {
    let modelType: string | undefined;
    let backend: RustTokenizer;
    const addedTokens = new Set<string>();
    try {
      const parsed = JSON.parse(tokenizerJson) as { model?: { type?: unknown }; added_tokens?: { content?: unknown }[] };
      modelType = typeof parsed.model?.type === 'string' ? parsed.model.type : undefined;
      for (const t of parsed.added_tokens ?? []) if (typeof t.content === 'string') addedTokens.add(t.content);
      backend = RustTokenizer.fromString(tokenizerJson);
    } catch (e) {
      throw new ProcessorError('TOKENIZER_ERROR', `tokenizer.json could not be loaded: ${(e as Error).message}`, { cause: e });
    }
    const config = parseTokenizerConfig(tokenizerConfig);
    if (config.raw.split_special_tokens === true) {
      throw new ProcessorError('TOKENIZER_ERROR', 'tokenizer_config.json sets split_special_tokens, which this tokenizer does not support');
    }
    return new Tokenizer(backend, config, modelType, addedTokens);
  }

  /** Reads `dir/tokenizer.json` and `dir/tokenizer_config.json` (optional), as HF's AutoTokenizer.from_pretrained. */
  static async fromPretrained(dir: string): Promise<Tokenizer> {
    const jsonPath = join(dir, 'tokenizer.json');
    let text: string;
    try {
      text = await readFile(jsonPath, 'utf8');
    } catch (e) {
      throw new ProcessorError('TOKENIZER_ERROR', `${jsonPath} cannot be read: a model directory needs a tokenizer.json`, { cause: e });
    }
    return Tokenizer.fromJSON(text, await readJsonIfPresent(join(dir, 'tokenizer_config.json')));
  }

  /** HF `special_tokens_map`: bos_token, eos_token, ..., image_token, ... -> their text. */
  get specialTokens(): Readonly<Record<string, string>> {
    return this.config.specialTokens;
  }

  /** The id of a special token by its HF name (`'image_token'` -> the id of `<image>`), undefined when not set. */
  specialTokenId(name: string): number | undefined {
    const t = this.config.specialTokens[name];
    return t === undefined ? undefined : this.tokenToId(t);
  }

  tokenToId(token: string): number | undefined {
    return this.backend.tokenToId(token) ?? undefined;
  }

  idToToken(id: number): string | undefined {
    return this.backend.idToToken(id) ?? undefined;
  }

  /** Vocabulary size with the added tokens (HF `len(tokenizer)`). */
  get size(): number {
    return this.backend.getVocabSize(true);
  }

  /** Text to ids, as HF's `tokenizer(text)["input_ids"]` (no padding, no truncation). */
  async encode(text: string, options: TokenizerEncodeOptions = {}): Promise<number[]> {
    const add = options.addSpecialTokens ?? true;
    if (this.#template === undefined) {
      return (await this.backend.encode(text, null, { addSpecialTokens: add })).getIds();
    }
    const ids = (await this.backend.encode(text, null, { addSpecialTokens: false })).getIds();
    return add ? [...this.#template.bos, ...ids, ...this.#template.eos] : ids;
  }

  /** Ids to text, as HF's `tokenizer.decode(ids, skip_special_tokens)`. */
  async decode(ids: readonly number[] | ArrayLike<number | bigint>, options: TokenizerDecodeOptions = {}): Promise<string> {
    const list = Array.from(ids as ArrayLike<number | bigint>, Number);
    const text = await this.backend.decode(list, options.skipSpecialTokens ?? false);
    return this.#cleanUp ? cleanUpTokenization(text) : text;
  }

  /** A streaming detokenizer over this tokenizer: push generated ids, get text pieces that are whole characters. */
  detokenizer(options: IncrementalDetokenizerOptions = {}): IncrementalDetokenizer {
    return new IncrementalDetokenizer((ids) => this.decode(ids, options));
  }
}

/** HF PreTrainedTokenizerBase.clean_up_tokenization. */
function cleanUpTokenization(text: string): string {
  return text
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

/** A JSON object file, or `{}` when the file does not exist; a file that is not a JSON object throws `code`. */
export async function readJsonIfPresent(path: string, code: ProcessorErrorCode = 'TOKENIZER_ERROR'): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw e;
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw new ProcessorError(code, `${path} is not a JSON object: ${(e as Error).message}`, { cause: e });
  }
}
