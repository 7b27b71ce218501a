// The library that runs a tokenizer.json: HF's Rust `tokenizers` in Node (platform.node.ts), the pure
// JavaScript `@huggingface/tokenizers` in the browser (tokenizer-js.ts). Tokenizer (tokenizer.ts) does
// everything HF's TokenizersBackend does around it, once, for both.

/** A tokenizer.json as given: its text and the parsed object (after vlmkit's class rebuilds). */
export interface TokenizerJson {
  readonly text: string;
  readonly json: Record<string, unknown>;
}

/** One loaded tokenizer.json, padding and truncation off. */
export interface TokenizerBackend {
  /** The library, for messages ('tokenizers (Rust)', '@huggingface/tokenizers'). */
  readonly library: string;
  tokenToId(token: string): number | undefined;
  idToToken(id: number): string | undefined;
  /** The vocabulary with the added tokens (HF `len(tokenizer)`). */
  size(): number;
  /** Text to ids; `addSpecialTokens`: the post-processor's (BOS, ...). */
  encode(text: string, addSpecialTokens: boolean): Promise<number[]>;
  /** Ids to text; ids outside the vocabulary are skipped, as the Rust library skips them. */
  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string>;
}

/**
 * Loads tokenizer.json and adds `specialTokens` as special added tokens, as HF's
 * `tokenizer.add_special_tokens` does (a token of the model's vocabulary keeps its id, a new one gets the
 * next id). Throws a ProcessorError TOKENIZER_ERROR for a tokenizer.json it cannot run exactly.
 */
export type TokenizerBackendFactory = (tokenizer: TokenizerJson, specialTokens: readonly string[]) => TokenizerBackend;
