import { Tokenizer as RustTokenizer } from 'tokenizers';
import { ProcessorError } from '../errors.js';
import type { TokenizerBackend, TokenizerBackendFactory } from './tokenizer-backend.js';

/** HF's own Rust library (the `tokenizers` npm package): the Node default, what HF's TokenizersBackend runs. */
export const rustTokenizerBackend: TokenizerBackendFactory = ({ text }, specialTokens) => {
  let rust: RustTokenizer;
  try {
    rust = RustTokenizer.fromString(text);
  } catch (e) {
    throw new ProcessorError('TOKENIZER_ERROR', `tokenizer.json could not be loaded: ${(e as Error).message}`, { cause: e });
  }
  rust.disablePadding();
  rust.disableTruncation();
  if (specialTokens.length > 0) rust.addSpecialTokens([...specialTokens]);
  return new RustBackend(rust);
};

class RustBackend implements TokenizerBackend {
  readonly library = 'tokenizers (Rust)';
  constructor(private readonly rust: RustTokenizer) {}

  tokenToId(token: string): number | undefined {
    return this.rust.tokenToId(token) ?? undefined;
  }

  idToToken(id: number): string | undefined {
    return this.rust.idToToken(id) ?? undefined;
  }

  size(): number {
    return this.rust.getVocabSize(true);
  }

  async encode(text: string, addSpecialTokens: boolean): Promise<number[]> {
    return (await this.rust.encode(text, null, { addSpecialTokens })).getIds();
  }

  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    return this.rust.decode([...ids], skipSpecialTokens);
  }
}
