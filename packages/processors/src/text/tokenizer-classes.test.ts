/**
 * One tokenizer.json read as each tokenizer_config.json `tokenizer_class` against HF 5.17's
 * AutoTokenizer (test-fixtures/processors/tokenizer-classes/cases.json, made by
 * tools/processors/make_tokenizer_class_cases.py): the same ids and decodes, or a refusal naming the
 * class vlmkit does not rebuild.
 */
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { fixturePath, readJson } from '../test-utils/fixtures.js';
import { Tokenizer } from './tokenizer.js';
import { resolveTokenizerClass } from './tokenizer-classes.js';

interface ClassCase {
  folder: string;
  /** tokenizer_config.json keys set on top of the folder's. */
  config: Record<string, unknown>;
  tokenizer_class: string;
  hf?: { text: string; ids: number[]; decode: string; decodeSkipSpecial: string }[];
  vlmkit?: { code: string; mentions: string[] };
}

const cases = readJson<ClassCase[]>('tokenizer-classes/cases.json');
const tmp = await mkdtemp(join(tmpdir(), 'vlmkit-tokenizer-classes-'));
afterAll(() => rm(tmp, { recursive: true, force: true }));

/** The case's folder with its tokenizer_config.json naming the case's class, as the tool script loads it. */
async function folderAs(c: ClassCase, n: number): Promise<string> {
  const src = fixturePath(c.folder);
  const dst = join(tmp, String(n));
  await mkdir(dst);
  for (const f of await readdir(src)) {
    if (['tokenizer.json', 'special_tokens_map.json'].includes(f)) await copyFile(join(src, f), join(dst, f));
  }
  const config = readJson<Record<string, unknown>>(c.folder, 'tokenizer_config.json');
  await writeFile(join(dst, 'tokenizer_config.json'), JSON.stringify({ ...config, ...c.config, tokenizer_class: c.tokenizer_class }));
  return dst;
}

describe('tokenizer_class as HF 5.17 builds it', () => {
  cases.forEach((c, n) => {
    it(`${c.folder} ${JSON.stringify(c.config)} as ${c.tokenizer_class}`, async () => {
      const dir = await folderAs(c, n);
      if (c.vlmkit !== undefined) {
        const err = await Tokenizer.fromPretrained(dir).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ProcessorError);
        expect((err as ProcessorError).code).toBe(c.vlmkit.code);
        for (const m of c.vlmkit.mentions) expect((err as Error).message).toContain(m);
        return;
      }
      const tok = await Tokenizer.fromPretrained(dir);
      for (const t of c.hf ?? []) {
        const ids = await tok.encode(t.text);
        expect({ text: t.text, ids }).toEqual({ text: t.text, ids: t.ids });
        expect(await tok.decode(t.ids)).toBe(t.decode);
        expect(await tok.decode(t.ids, { skipSpecialTokens: true })).toBe(t.decodeSkipSpecial);
      }
    });
  });
});

interface ClassChoice {
  tokenizer_class: string | null;
  config: Record<string, unknown> | null;
  hf: string;
}

describe('resolveTokenizerClass', () => {
  // PreTrainedTokenizerFast is TokenizersBackend in HF 5, and a *Fast name the class without it.
  const hfName = (cls: string) => (cls === 'PreTrainedTokenizerFast' ? 'TokenizersBackend' : cls.replace(/Fast$/, ''));
  for (const c of readJson<ClassChoice[]>('tokenizer-classes/choices.json')) {
    it(`tokenizer_class ${c.tokenizer_class} with config.json ${JSON.stringify(c.config)}: ${c.hf}`, () => {
      const tokenizerConfig = c.tokenizer_class === null ? {} : { tokenizer_class: c.tokenizer_class };
      expect(hfName(resolveTokenizerClass(tokenizerConfig, c.config ?? {}))).toBe(c.hf);
    });
  }

  it('refuses a model_type whose tokenizer class it does not know', () => {
    expect(() => resolveTokenizerClass({}, { model_type: 'bert' })).toThrow(/config\.json model_type "bert"/);
  });
});
