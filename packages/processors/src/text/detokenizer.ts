export interface IncrementalDetokenizerOptions {
  /** Drop special tokens (EOS, placeholders) from the text. Default false, as HF's TextStreamer. */
  skipSpecialTokens?: boolean;
}

/** U+FFFD: what a decoder writes for bytes that are not (yet) a whole UTF-8 character. */
const REPLACEMENT = '\uFFFD';

/**
 * Turns generated token ids into text pieces as they arrive, never splitting a character: a token
 * can hold part of a UTF-8 sequence (byte-level BPE, SentencePiece byte fallback), and a token's
 * text can depend on its left neighbour (SentencePiece's leading space). So, as
 * text-generation-inference's `decode_token` does, a short window is decoded twice, without and with
 * the new tokens, and the new suffix is emitted only when it does not end in U+FFFD; otherwise the
 * tokens wait for the next ones. `flush()` emits what is left at the end, so the pieces concatenate
 * to `decode(allIds)`.
 */
export class IncrementalDetokenizer {
  readonly #decode: (ids: number[]) => Promise<string>;
  readonly #ids: number[] = [];
  /** Start of the window decoded for context; `#read` is where the emitted text ends. */
  #prefix = 0;
  #read = 0;
  #emitted = '';

  /** `decode` turns ids into text (e.g. `(ids) => tokenizer.decode(ids, { skipSpecialTokens: true })`). */
  constructor(decode: (ids: number[]) => Promise<string>) {
    this.#decode = decode;
  }

  /** All ids pushed so far. */
  get ids(): readonly number[] {
    return this.#ids;
  }

  /** All text emitted so far (the concatenation of the returned pieces). */
  get text(): string {
    return this.#emitted;
  }

  /** Adds generated ids; returns the text they complete ('' while a character is still partial). */
  async push(ids: number | bigint | ArrayLike<number | bigint>): Promise<string> {
    if (typeof ids === 'number' || typeof ids === 'bigint') this.#ids.push(Number(ids));
    else for (let i = 0; i < ids.length; i++) this.#ids.push(Number(ids[i]));
    if (this.#ids.length === this.#read) return '';
    const before = await this.#decode(this.#ids.slice(this.#prefix, this.#read));
    const after = await this.#decode(this.#ids.slice(this.#prefix));
    if (after.length <= before.length || after.endsWith(REPLACEMENT) || !after.startsWith(before)) return '';
    const piece = after.slice(before.length);
    this.#prefix = this.#read;
    this.#read = this.#ids.length;
    this.#emitted += piece;
    return piece;
  }

  /**
   * Emits the rest at the end of generation: whatever the held-back ids decode to (a trailing
   * U+FFFD included, as the full decode has it).
   */
  async flush(): Promise<string> {
    const all = await this.#decode(this.#ids);
    this.#prefix = this.#read = this.#ids.length;
    if (!all.startsWith(this.#emitted)) return '';
    const piece = all.slice(this.#emitted.length);
    this.#emitted = all;
    return piece;
  }

  /** Pipes a stream of ids into a stream of non-empty text pieces, flushing at its end. */
  async *stream(ids: AsyncIterable<number | bigint | ArrayLike<number | bigint>>): AsyncGenerator<string> {
    for await (const id of ids) {
      const piece = await this.push(id);
      if (piece !== '') yield piece;
    }
    const rest = await this.flush();
    if (rest !== '') yield rest;
  }
}
