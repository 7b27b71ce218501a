import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { byteLevelTokenizerJson, sentencePieceTokenizerJson } from './test-utils/tiny-tokenizers.js';
import { parseTokenizerConfig, Tokenizer } from './tokenizer.js';

describe('parseTokenizerConfig', () => {
  it('collects named, *_token and extra_special_tokens dict tokens as HF special_tokens_map does', () => {
    const cfg = parseTokenizerConfig({
      bos_token: '<s>',
      eos_token: { __type: 'AddedToken', content: '</s>', lstrip: false },
      pad_token: null,
      image_token: '<image>',
      extra_special_tokens: { image_start_token: '<|IMAGE_START|>' },
      model_max_length: 128,
      chat_template: [{ name: 'default', template: 'x' }],
      add_bos_token: false,
    });
    expect(cfg.specialTokens).toEqual({
      bos_token: '<s>',
      eos_token: '</s>',
      image_token: '<image>',
      image_start_token: '<|IMAGE_START|>',
    });
    expect(cfg.extraSpecialTokens).toEqual([]);
    expect(cfg.chatTemplate).toEqual({ default: 'x' });
  });

  it('keeps a list of extra special tokens apart from the named ones', () => {
    const cfg = parseTokenizerConfig({ additional_special_tokens: ['<a>', { content: '<b>' }] });
    expect(cfg.extraSpecialTokens).toEqual(['<a>', '<b>']);
    expect(cfg.specialTokens).toEqual({});
  });
});

describe('Tokenizer', () => {
  it("adds special tokens through tokenizer.json's post-processor unless told not to", async () => {
    const tok = Tokenizer.fromJSON(byteLevelTokenizerJson(), { bos_token: '<s>' });
    const ids = await tok.encode('hi');
    expect(ids[0]).toBe(1);
    expect(await tok.encode('hi', { addSpecialTokens: false })).toEqual(ids.slice(1));
    expect(await tok.decode(ids)).toBe('<s>hi');
    expect(await tok.decode(ids, { skipSpecialTokens: true })).toBe('hi');
  });

  it('ignores add_bos_token / add_eos_token as HF 5.17 does when a tokenizer.json exists', async () => {
    // HF PreTrainedTokenizerBase._from_pretrained pops both; the post-processor of tokenizer.json decides.
    const json = byteLevelTokenizerJson();
    const ids = await Tokenizer.fromJSON(json, { bos_token: '<s>' }).encode('hi');
    expect(ids[0]).toBe(1);
    const noBos = Tokenizer.fromJSON(json, { bos_token: '<s>', eos_token: '</s>', add_bos_token: false });
    expect(await noBos.encode('hi')).toEqual(ids);
    const both = Tokenizer.fromJSON(json, { bos_token: '<s>', eos_token: '</s>', add_bos_token: true, add_eos_token: true });
    expect(await both.encode('hi')).toEqual(ids);
    // tokenizer.json without a post-processor: nothing is added, whatever the flags say.
    const sp = Tokenizer.fromJSON(sentencePieceTokenizerJson(), {
      bos_token: '<s>',
      eos_token: '</s>',
      add_bos_token: true,
      add_eos_token: true,
    });
    expect(await sp.encode('hi')).toEqual(await sp.encode('hi', { addSpecialTokens: false }));
  });

  it('refuses a lone surrogate with INVALID_INPUT naming its position, as HF raises', async () => {
    const tok = Tokenizer.fromJSON(byteLevelTokenizerJson());
    for (const [text, at] of [
      ['ab\uD800cd', 2],
      ['\uDC00', 0],
      ['ok \uD83D\uDE00 then \uD83D', 11],
    ] as const) {
      const e = await tok.encode(text).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e, JSON.stringify(text)).toBeInstanceOf(ProcessorError);
      expect((e as ProcessorError).code).toBe('INVALID_INPUT');
      expect((e as Error).message).toContain(`position ${at}`);
    }
    // A surrogate pair (an emoji) is one character and still encodes; decoding is unchanged.
    const ids = await tok.encode('ok \uD83D\uDE00', { addSpecialTokens: false });
    expect(await tok.decode(ids)).toBe('ok \uD83D\uDE00');
  });

  it('treats special tokens as single tokens and adds the ones the vocabulary lacks', async () => {
    const tok = Tokenizer.fromJSON(byteLevelTokenizerJson(), { bos_token: '<s>', video_token: '<video>' });
    expect(tok.specialTokenId('bos_token')).toBe(1);
    expect(tok.tokenToId('<image>')).toBe(3);
    const videoId = tok.specialTokenId('video_token');
    expect(videoId).toBe(tok.size - 1);
    expect(await tok.encode('a<image><video>b', { addSpecialTokens: false })).toEqual([tok.tokenToId('a'), 3, videoId, tok.tokenToId('b')]);
    expect(tok.idToToken(3)).toBe('<image>');
  });

  it('makes a special token of the config special even when the vocabulary has it as an ordinary token', async () => {
    // '<0x41>' is an ordinary byte token of the SentencePiece vocabulary, not an added token.
    const json = sentencePieceTokenizerJson();
    const plain = Tokenizer.fromJSON(json);
    const id = plain.tokenToId('<0x41>')!;
    expect(await plain.encode('x<0x41>y', { addSpecialTokens: false })).not.toContain(id);
    const tok = Tokenizer.fromJSON(json, { sep_token: '<0x41>' });
    expect(tok.specialTokenId('sep_token')).toBe(id);
    const ids = await tok.encode('x<0x41>y', { addSpecialTokens: false });
    expect(ids).toContain(id);
    expect(await tok.decode(ids, { skipSpecialTokens: true })).toBe(await tok.decode(ids.filter((i) => i !== id)));
  });

  it('decodes bigint ids (BigInt64Array from a model) like numbers', async () => {
    const tok = Tokenizer.fromJSON(byteLevelTokenizerJson());
    const ids = await tok.encode('héllo', { addSpecialTokens: false });
    expect(await tok.decode(BigInt64Array.from(ids, BigInt))).toBe('héllo');
  });

  it('rejects a tokenizer.json that does not load, with a ProcessorError', () => {
    expect(() => Tokenizer.fromJSON('{"model": 1}')).toThrow(ProcessorError);
  });

  it('refuses an added_tokens.json whose tokens tokenizer.json lacks (HF 5.17 would add them)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-added-tokens-'));
    try {
      await writeFile(join(dir, 'tokenizer.json'), byteLevelTokenizerJson());
      await writeFile(join(dir, 'added_tokens.json'), JSON.stringify({ '<extra>': 1000 }));
      const err = await Tokenizer.fromPretrained(dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProcessorError);
      expect((err as ProcessorError).code).toBe('TOKENIZER_ERROR');
      expect((err as Error).message).toMatch(/added_tokens\.json adds "<extra>"/);
      // With added_tokens_decoder in tokenizer_config.json, HF does not read the file.
      await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify({ added_tokens_decoder: {} }));
      await expect(Tokenizer.fromPretrained(dir)).resolves.toBeInstanceOf(Tokenizer);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses fix_mistral_regex, with which HF may swap the pre-tokenizer', () => {
    expect(() => Tokenizer.fromJSON(byteLevelTokenizerJson(), { fix_mistral_regex: true })).toThrow(/fix_mistral_regex/);
  });

  it("reads config.json's model_type to choose the tokenizer class, as AutoTokenizer", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-model-type-'));
    try {
      await writeFile(join(dir, 'tokenizer.json'), byteLevelTokenizerJson());
      await writeFile(join(dir, 'config.json'), JSON.stringify({ model_type: 'bert' }));
      await expect(Tokenizer.fromPretrained(dir)).rejects.toThrow(/config\.json model_type "bert"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
