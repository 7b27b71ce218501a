import { byteLevelAlphabet } from 'tokenizers';

/**
 * Tiny tokenizer.json files written in TypeScript for unit tests (no Python, no fixture): both
 * split characters outside ASCII into several byte tokens, the case streaming detokenization is for.
 */

const SPECIALS = ['<unk>', '<s>', '</s>', '<image>', '<|IMAGE_START|>', '<|IMAGE_END|>'];

function addedTokens(): object[] {
  return SPECIALS.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
}

function bpe(vocab: Record<string, number>, extra: object): object {
  return {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab,
    merges: [],
    ...extra,
  };
}

/** GPT-2 style byte-level BPE with no merges: one token per byte; `<s>` prepended by the post-processor. */
export function byteLevelTokenizerJson(): string {
  const vocab: Record<string, number> = {};
  for (const t of SPECIALS) vocab[t] = Object.keys(vocab).length;
  for (const c of byteLevelAlphabet()) vocab[c] = Object.keys(vocab).length;
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(),
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: byteLevel,
    model: bpe(vocab, {}),
  });
}

/**
 * Llama-2 style SentencePiece BPE: `▁` for spaces (prepended to the text), ASCII letters, and byte
 * fallback tokens `<0x00>`..`<0xFF>` for everything else; the decoder strips the prepended space.
 */
export function sentencePieceTokenizerJson(): string {
  const vocab: Record<string, number> = {};
  const add = (t: string) => {
    if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  };
  for (const t of SPECIALS) add(t);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  add('▁');
  for (let c = 33; c < 127; c++) add(String.fromCharCode(c));
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(),
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    },
    pre_tokenizer: null,
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: bpe(vocab, { unk_token: '<unk>', byte_fallback: true }),
  });
}
