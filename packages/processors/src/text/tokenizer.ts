import { defaultTokenizerBackend, processorDirFiles } from '#platform';
import { ProcessorError } from '../errors.js';
import {
  fileName,
  MAX_TOKENIZER_JSON_BYTES,
  type ModelFiles,
  readJsonIfPresent,
  readJsonObject,
  readProcessorFile,
} from '../model-files.js';
import { IncrementalDetokenizer, type IncrementalDetokenizerOptions } from './detokenizer.js';
import type { TokenizerBackend, TokenizerBackendFactory } from './tokenizer-backend.js';
import { applyAddedTokensDecoder, rebuildTokenizerJson, rebuiltAddedTokens, resolveTokenizerClass } from './tokenizer-classes.js';

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

/**
 * The special tokens in the order HF 5.17 adds the missing ones (TokenizersBackend.__init__): the named
 * ones in SPECIAL_TOKENS_ATTRIBUTES order, the model-specific ones, then the extra list.
 */
function specialTokensInOrder(config: TokenizerConfig): string[] {
  const named = NAMED_SPECIAL_TOKENS.map((k) => config.specialTokens[k]).filter((t): t is string => t !== undefined);
  const modelSpecific = Object.entries(config.specialTokens)
    .filter(([k]) => !(NAMED_SPECIAL_TOKENS as readonly string[]).includes(k))
    .map(([, t]) => t);
  return [...new Set([...named, ...modelSpecific, ...config.extraSpecialTokens])];
}

/**
 * The special tokens that tokenizer_config.json (or special_tokens_map.json) gives as serialized
 * AddedTokens (`{ content, lstrip, ... }`): content -> those fields. HF adds them with these options.
 */
function specialTokenOptions(raw: Record<string, unknown>): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  const visit = (v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as { content?: unknown }).content === 'string') {
      out.set((v as { content: string }).content, v as Record<string, unknown>);
    }
  };
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'extra_special_tokens' || key === 'additional_special_tokens') {
      if (Array.isArray(value)) value.forEach(visit);
      else if (value !== null && typeof value === 'object') Object.values(value).forEach(visit);
    } else if (key.endsWith('_token')) visit(value);
  }
  return out;
}

export interface TokenizerEncodeOptions {
  /** Add the special tokens the tokenizer's post-processor adds (BOS, ...). Default true, as HF's `tokenizer(text)`. */
  addSpecialTokens?: boolean;
}

export interface TokenizerOptions {
  /**
   * The library that runs tokenizer.json: default HF's Rust `tokenizers` in Node and `@huggingface/tokenizers`
   * (jsTokenizerBackend) in the browser, which refuses what it does not reproduce (see the README).
   */
  backend?: TokenizerBackendFactory;
}

export interface TokenizerDecodeOptions {
  /** Drop special tokens (BOS, EOS, image placeholders, ...). Default false, as HF's `decode`. */
  skipSpecialTokens?: boolean;
}

/**
 * A tokenizer.json tokenizer run by HF's own Rust library (the `tokenizers` npm package), set up as
 * transformers 5.17's TokenizersBackend sets it up from tokenizer.json + tokenizer_config.json:
 * special tokens that are not added tokens of tokenizer.json added as special ones, padding and
 * truncation off (what HF's processors call it with), special tokens added by tokenizer.json's
 * post-processor alone: HF drops tokenizer_config.json's add_bos_token / add_eos_token whenever a
 * tokenizer.json exists (PreTrainedTokenizerBase._from_pretrained), and a tokenizer.json without a
 * post-processor then gets `$A` (nothing added).
 */
export class Tokenizer {
  readonly #cleanUp: boolean;

  private constructor(
    readonly backend: TokenizerBackend,
    readonly config: TokenizerConfig,
    modelType: string | undefined,
  ) {
    // HF _decode: clean_up_tokenization_spaces is ignored for BPE models (it would corrupt them).
    this.#cleanUp = config.cleanUpTokenizationSpaces && modelType !== 'BPE';
  }

  /**
   * HF TokenizersBackend.__init__: special tokens of the config that are not added tokens yet become
   * special added tokens (kept whole when encoding, dropped by skipSpecialTokens), also when the
   * model's vocabulary has them as ordinary tokens (they keep that id).
   */
  private static missingSpecialTokens(config: TokenizerConfig, addedTokens: ReadonlySet<string>): string[] {
    const missing = specialTokensInOrder(config).filter((t) => !addedTokens.has(t));
    const options = specialTokenOptions(config.raw);
    for (const t of missing) {
      const o = options.get(t);
      if (o !== undefined && (o.lstrip === true || o.rstrip === true || o.single_word === true || o.normalized === true)) {
        throw new ProcessorError(
          'TOKENIZER_ERROR',
          `tokenizer_config.json / special_tokens_map.json give special token ${JSON.stringify(t)} with lstrip, rstrip, ` +
            'single_word or normalized set, and it is not an added token of tokenizer.json: HF 5.17 adds it with those ' +
            "options, which vlmkit does not reproduce; add it to tokenizer.json's added_tokens.",
        );
      }
    }
    return missing;
  }

  /**
   * From the text of tokenizer.json, the parsed tokenizer_config.json (`{}` when there is none) and the
   * model's config.json (`{}` when there is none: it can choose the tokenizer class, see
   * resolveTokenizerClass). A tokenizer class that HF rebuilds from tokenizer.json is rebuilt the same
   * way (rebuildTokenizerJson); one vlmkit cannot rebuild is refused by name.
   */
  static fromJSON(
    tokenizerJson: string,
    tokenizerConfig: Record<string, unknown> = {},
    modelConfig: Record<string, unknown> = {},
    options: TokenizerOptions = {},
  ): Tokenizer {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(tokenizerJson) as Record<string, unknown>;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    } catch (e) {
      throw new ProcessorError('TOKENIZER_ERROR', `tokenizer.json could not be loaded: ${(e as Error).message}`, { cause: e });
    }
    const cls = resolveTokenizerClass(tokenizerConfig, modelConfig);
    const { json, rebuilt } = rebuildTokenizerJson(parsed, cls, tokenizerConfig);
    let raw = tokenizerConfig;
    if (rebuilt !== null) {
      // The class's keyword defaults stand for the special tokens tokenizer_config.json does not name.
      raw = { ...Object.fromEntries(Object.entries(rebuilt.defaults).filter(([k]) => !(k in tokenizerConfig))), ...tokenizerConfig };
    }
    const config = parseTokenizerConfig(raw);
    let source = tokenizerJson;
    if (rebuilt !== null) {
      json.added_tokens = rebuiltAddedTokens(parsed, raw, specialTokensInOrder(config), specialTokenOptions(raw), rebuilt);
      source = JSON.stringify(json);
    } else if (applyAddedTokensDecoder(json, raw)) {
      source = JSON.stringify(json);
    }
    const modelType = (json.model as { type?: unknown } | undefined)?.type;
    const addedTokens = new Set<string>();
    const added = Array.isArray(json.added_tokens) ? (json.added_tokens as { content?: unknown }[]) : [];
    for (const t of added) if (typeof t?.content === 'string') addedTokens.add(t.content);
    for (const key of ['padding_side', 'truncation_side']) {
      const side = config.raw[key];
      // PreTrainedTokenizerBase.__init__ raises for anything else (null included: it is not the default there).
      if (key in config.raw && side !== 'left' && side !== 'right') {
        throw new ProcessorError(
          'TOKENIZER_ERROR',
          `tokenizer_config.json ${key} must be "left" or "right" (HF refuses ${JSON.stringify(side)}).`,
        );
      }
    }
    if (config.raw.fix_mistral_regex === true) {
      // HF then may replace the pre-tokenizer's split pattern (TokenizersBackend._patch_mistral_regex).
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        'tokenizer_config.json sets fix_mistral_regex, with which HF 5.17 may replace the pre-tokenizer; vlmkit does not: ' +
          'put the fixed pattern in tokenizer.json and drop the key.',
      );
    }
    if (config.raw.split_special_tokens === true) {
      throw new ProcessorError('TOKENIZER_ERROR', 'tokenizer_config.json sets split_special_tokens, which this tokenizer does not support');
    }
    const missing = Tokenizer.missingSpecialTokens(config, addedTokens);
    const backend = (options.backend ?? defaultTokenizerBackend)({ text: source, json }, missing);
    return new Tokenizer(backend, config, typeof modelType === 'string' ? modelType : undefined);
  }

  /**
   * Reads `tokenizer.json`, `tokenizer_config.json` and `config.json` (both optional) of a model folder, as
   * HF's AutoTokenizer.from_pretrained: a directory path (Node), or ModelFiles (a URL or a picked folder,
   * from @vlmkit/safetensors; any platform).
   */
  static async fromPretrained(dir: string | ModelFiles, options: TokenizerOptions = {}): Promise<Tokenizer> {
    const files = typeof dir === 'string' ? processorDirFiles(dir) : dir;
    const text = await readProcessorFile(files, 'tokenizer.json', 'TOKENIZER_ERROR', MAX_TOKENIZER_JSON_BYTES);
    if (text === undefined) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `${fileName(files, 'tokenizer.json')} is missing or not a regular file: a model directory needs a tokenizer.json`,
      );
    }
    let tokenizerConfig = await readJsonIfPresent(files, 'tokenizer_config.json');
    // HF's legacy files count only when tokenizer_config.json has no added_tokens_decoder.
    if (!('added_tokens_decoder' in tokenizerConfig)) {
      const map = await readJsonObject(files, 'special_tokens_map.json');
      if (map !== undefined) tokenizerConfig = withSpecialTokensMap(tokenizerConfig, map);
      const added = await readJsonObject(files, 'added_tokens.json');
      if (added !== undefined) checkAddedTokensJson(added, text, fileName(files, 'added_tokens.json'));
    }
    return Tokenizer.fromJSON(text, tokenizerConfig, await readJsonIfPresent(files, 'config.json'), options);
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
    return this.backend.tokenToId(token);
  }

  idToToken(id: number): string | undefined {
    return this.backend.idToToken(id);
  }

  /** Vocabulary size with the added tokens (HF `len(tokenizer)`). */
  get size(): number {
    return this.backend.size();
  }

  /**
   * Text to ids, as HF's `tokenizer(text)["input_ids"]` (no padding, no truncation). A lone UTF-16
   * surrogate is refused (HF's tokenizer raises; the Rust library here would map it to `<unk>` or drop it).
   */
  async encode(text: string, options: TokenizerEncodeOptions = {}): Promise<number[]> {
    const lone = loneSurrogate(text);
    if (lone !== undefined) {
      const hex = text.charCodeAt(lone).toString(16).toUpperCase();
      throw new ProcessorError(
        'INVALID_INPUT',
        `the text has a lone surrogate (U+${hex}, half of a UTF-16 pair) at position ${lone}, which is not a character ` +
          "and HF's tokenizer refuses; fix the text's encoding (a string cut in the middle of an emoji, or bad \\u escapes).",
      );
    }
    return this.backend.encode(text, options.addSpecialTokens ?? true);
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

/**
 * tokenizer_config.json with special_tokens_map.json's entries over it, as HF 5.17's
 * PreTrainedTokenizerBase._from_pretrained reads that legacy file: a named token replaces the config's,
 * an `extra_special_tokens` list is appended to, `additional_special_tokens` counts only where the
 * config has no extra tokens (PreTrainedTokenizerBase.__init__).
 */
function withSpecialTokensMap(config: Record<string, unknown>, map: Record<string, unknown>): Record<string, unknown> {
  const out = { ...config };
  if ('additional_special_tokens' in out && !('extra_special_tokens' in out)) {
    out.extra_special_tokens = out.additional_special_tokens;
    delete out.additional_special_tokens;
  }
  for (const [key, value] of Object.entries(map)) {
    if (key === 'extra_special_tokens' && Array.isArray(value)) {
      const existing = Array.isArray(out.extra_special_tokens) ? [...out.extra_special_tokens] : [];
      for (const t of value) if (!existing.some((e) => tokenText(e) === tokenText(t))) existing.push(t);
      out.extra_special_tokens = existing;
    } else if (key === 'additional_special_tokens') {
      if (!('extra_special_tokens' in out)) out.extra_special_tokens = value;
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * HF 5.17 adds added_tokens.json's tokens (legacy, read when tokenizer_config.json has no
 * added_tokens_decoder) to the tokenizer; vlmkit follows it only where they are tokenizer.json's added
 * tokens already, with the same ids, and refuses the file otherwise.
 */
function checkAddedTokensJson(added: Record<string, unknown>, tokenizerJson: string, path: string): void {
  let parsed: { added_tokens?: { id?: unknown; content?: unknown }[] };
  try {
    parsed = JSON.parse(tokenizerJson);
  } catch {
    return; // Tokenizer.fromJSON says what is wrong with tokenizer.json.
  }
  const ids = new Map((parsed.added_tokens ?? []).map((t) => [t.content, t.id]));
  for (const [content, id] of Object.entries(added)) {
    if (ids.get(content) !== id) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `${path} adds ${JSON.stringify(content)} as id ${JSON.stringify(id)}, which is not an added token of tokenizer.json ` +
          'with that id; HF 5.17 would add it, vlmkit does not: add it to tokenizer.json or delete added_tokens.json.',
      );
    }
  }
}

/** The UTF-16 index of the first unpaired surrogate (in a `u` regex a pair is one code point), undefined if none. */
function loneSurrogate(text: string): number | undefined {
  return /[\uD800-\uDFFF]/u.exec(text)?.index;
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
