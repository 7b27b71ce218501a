import { describe, expect, it } from 'vitest';
import { byteLevelTokenizerJson, sentencePieceTokenizerJson } from './test-utils/tiny-tokenizers.js';
import { Tokenizer } from './tokenizer.js';

const TEXTS = [
  'Hello world',
  'héllo wörld',
  '日本語のテキスト',
  'emoji 👍🏽 and 🇫🇷 flags',
  'mixed: a→b, ∑x² ≠ 0\nnew line',
  ' leading space',
];

/** Streams `ids` one at a time and returns the pieces (flush included). */
async function pieces(tok: Tokenizer, ids: readonly number[], skipSpecialTokens = false): Promise<string[]> {
  const d = tok.detokenizer({ skipSpecialTokens });
  const out: string[] = [];
  for (const id of ids) out.push(await d.push(id));
  out.push(await d.flush());
  expect(d.text).toBe(out.join(''));
  return out;
}

for (const [name, json] of [
  ['byte-level BPE', byteLevelTokenizerJson()],
  ['SentencePiece byte fallback', sentencePieceTokenizerJson()],
] as const) {
  describe(`IncrementalDetokenizer (${name})`, () => {
    const tok = Tokenizer.fromJSON(json, { bos_token: '<s>', eos_token: '</s>' });

    it('encodes multi-byte characters into several tokens (the case the detokenizer is for)', async () => {
      const ids = await tok.encode('日', { addSpecialTokens: false });
      expect(ids.length).toBeGreaterThanOrEqual(3);
      expect(await tok.decode(ids.slice(0, -1))).toContain('\uFFFD');
    });

    it('yields pieces that concatenate to the full decode and never hold a broken character', async () => {
      for (const text of TEXTS) {
        const ids = await tok.encode(text, { addSpecialTokens: false });
        const full = await tok.decode(ids);
        expect(full).toBe(text);
        const ps = await pieces(tok, ids);
        expect(ps.join('')).toBe(full);
        for (const p of ps) expect(p).not.toContain('\uFFFD');
        // Each character comes out as soon as its last byte arrives: as many non-empty pieces as code points.
        expect(ps.filter((p) => p !== '').length).toBe([...full].length);
      }
    });

    it('holds back a partial character until it completes', async () => {
      const ids = await tok.encode('aé', { addSpecialTokens: false });
      const d = tok.detokenizer();
      await d.push(ids.slice(0, -2));
      expect(d.text).toBe('a');
      expect(await d.push(ids.at(-2)!)).toBe('');
      expect(await d.push(ids.at(-1)!)).toBe('é');
      expect(await d.flush()).toBe('');
    });

    it('emits an unfinished character as U+FFFD at flush, as the full decode does', async () => {
      const ids = (await tok.encode('ab日', { addSpecialTokens: false })).slice(0, -1);
      const ps = await pieces(tok, ids);
      expect(ps.join('')).toBe(await tok.decode(ids));
      expect(ps.at(-1)).toMatch(/^\uFFFD+$/);
    });

    it('skips special tokens when asked, as decode(ids, { skipSpecialTokens: true })', async () => {
      const eos = tok.specialTokenId('eos_token')!;
      const ids = [...(await tok.encode('né', { addSpecialTokens: false })), eos];
      expect((await pieces(tok, ids, true)).join('')).toBe(await tok.decode(ids, { skipSpecialTokens: true }));
      expect((await pieces(tok, ids, false)).join('')).toBe(`${await tok.decode(ids.slice(0, -1))}</s>`);
    });

    it('streams an async iterable of ids (several ids per step too)', async () => {
      const ids = await tok.encode('wörld 👍', { addSpecialTokens: false });
      async function* source() {
        yield ids.slice(0, 2);
        for (const id of ids.slice(2)) yield BigInt(id);
      }
      const out: string[] = [];
      for await (const p of tok.detokenizer().stream(source())) out.push(p);
      expect(out.join('')).toBe(await tok.decode(ids));
      expect(out.every((p) => p !== '' && !p.includes('\uFFFD'))).toBe(true);
    });
  });
}
