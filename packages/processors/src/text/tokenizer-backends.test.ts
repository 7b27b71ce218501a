/**
 * The browser's tokenizer (@huggingface/tokenizers, jsTokenizerBackend) against HF's Rust library (the
 * Node default) on every fixture tokenizer: ids with and without special tokens, decodes with and
 * without skipping special tokens, vocabulary lookups, on generic, unicode, special-token and
 * processor-case texts (the processor cases' input_ids end to end: processor.model-files.test.ts).
 * Any difference fails; the counts are printed for the README ("In the browser").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ModelFiles } from '../model-files.js';
import { FIXTURES, fixturePath, readJson } from '../test-utils/fixtures.js';
import { folderInMemory, memoryFiles } from '../test-utils/memory-files.js';
import { type ChatMessage, ChatTemplate } from './chat-template.js';
import { Tokenizer } from './tokenizer.js';
import { jsTokenizerBackend } from './tokenizer-js.js';
import { rustTokenizerBackend } from './tokenizer-rust.node.js';

const MODELS = join(FIXTURES, '..');

const GENERIC = [
  'Hello world',
  ' Hello  world ',
  'Héllo wörld, ça va? 日本語 テキスト 🙂',
  '👨‍👩‍👧‍👦 family, 🇯🇵 flag, é (e + U+0301), ﬁ ligature, Ω',
  'tabs\tand\nnewlines\r\n\n  trailing   ',
  "it's don't I'm we've they'll IT'S",
  '12345 3.14159 1,000,000 0x1F',
  'ÿ\u0007\u001b control \u00a0nbsp \u2028 line separator \u200b zero width',
  'Ünïcödé ßtraße ǅ İstanbul',
  'emoji only: 🙂🙃🤖🧠🦀',
  'a'.repeat(300),
  'The quick brown fox jumps over the lazy dog. '.repeat(8),
  '<not a token> <|also not|> </s',
  '',
];

interface Subject {
  name: string;
  files: () => ModelFiles;
  texts: string[];
}

function templated(dir: string): string[] {
  let cases: string[];
  try {
    cases = readdirSync(join(dir, 'cases'));
  } catch {
    return [];
  }
  const out: string[] = [];
  const template = readFileSync(join(dir, 'chat_template.jinja'), 'utf8');
  for (const name of cases) {
    const c = JSON.parse(readFileSync(join(dir, 'cases', name, 'case.json'), 'utf8')) as {
      prompt?: string;
      messages?: ChatMessage[];
      apply_chat_template?: { add_generation_prompt?: boolean; enable_thinking?: boolean };
    };
    if (typeof c.prompt === 'string') out.push(c.prompt);
    if (c.messages !== undefined) {
      const t = new ChatTemplate(template, {});
      try {
        const variables =
          c.apply_chat_template?.enable_thinking === undefined ? {} : { enable_thinking: c.apply_chat_template.enable_thinking };
        out.push(t.apply(c.messages, { addGenerationPrompt: c.apply_chat_template?.add_generation_prompt ?? false, variables }));
      } catch {
        // A template that needs the special tokens is rendered by the prompt above.
      }
    }
  }
  return out;
}

const folders = [
  ...['ernie-tiny', 'granite-tiny', 'qwen3-vl-tiny', 'qwen3-vl-moe-tiny'].map((d) => join(MODELS, d)),
  ...['ernie', 'granite', 'qwen3vl', 'hf-saved/ernie', 'hf-saved/granite'].map((d) => fixturePath(d)),
  ...readdirSync(fixturePath('tokenizer-classes'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => fixturePath('tokenizer-classes', e.name)),
];

interface ClassCase {
  folder: string;
  config: Record<string, unknown>;
  tokenizer_class: string;
  hf?: { text: string }[];
  vlmkit?: unknown;
}
const classCases = readJson<ClassCase[]>('tokenizer-classes/cases.json');
const hfSaved = readJson<{ cases: { hf?: { prompt?: string } | null }[] }>('hf-saved', 'cases.json');
const savedPrompts = hfSaved.cases.flatMap((c) => (typeof c.hf?.prompt === 'string' ? [c.hf.prompt] : []));

const subjects: Subject[] = [
  ...folders.map((dir) => ({
    name: dir.slice(MODELS.length + 1),
    files: () => folderInMemory(dir),
    texts: [...templated(dir), ...(dir.includes('hf-saved') ? savedPrompts : [])],
  })),
  ...classCases
    .filter((c) => c.vlmkit === undefined)
    .map((c, n) => ({
      name: `tokenizer-classes case ${n}: ${c.folder} as ${c.tokenizer_class} ${JSON.stringify(c.config)}`,
      files: () => {
        const dir = fixturePath(c.folder);
        const config = readJson<Record<string, unknown>>(c.folder, 'tokenizer_config.json');
        const contents: Record<string, string> = {
          'tokenizer.json': readFileSync(join(dir, 'tokenizer.json'), 'utf8'),
          'tokenizer_config.json': JSON.stringify({ ...config, ...c.config, tokenizer_class: c.tokenizer_class }),
        };
        try {
          contents['special_tokens_map.json'] = readFileSync(join(dir, 'special_tokens_map.json'), 'utf8');
        } catch {}
        return memoryFiles(dir, contents);
      },
      texts: (c.hf ?? []).map((t) => t.text),
    })),
];

const counts = { tokenizers: 0, refusedByBoth: 0, texts: 0, encodes: 0, decodes: 0, lookups: 0, differences: 0 };
afterAll(() => {
  console.log(`tokenizer backends, JS vs Rust: ${JSON.stringify(counts)}`);
});

/** The tokens a text is built around: every added and special token, alone and inside text. */
function tokenTexts(rust: Tokenizer, json: { added_tokens?: { content: string }[] }): string[] {
  const tokens = [...new Set([...(json.added_tokens ?? []).map((t) => t.content), ...Object.values(rust.specialTokens)])];
  return [...tokens, ...tokens.map((t) => `a${t}b ${t} ${t}${t}\n${t}`), tokens.join(' x ')];
}

describe('@huggingface/tokenizers gives the Rust library ids and text', () => {
  for (const s of subjects) {
    it(s.name, async () => {
      const diffs: string[] = [];
      const same = (what: string, a: unknown, b: unknown) => {
        if (JSON.stringify(a) !== JSON.stringify(b)) diffs.push(`${what}: js ${JSON.stringify(a)} rust ${JSON.stringify(b)}`.slice(0, 400));
      };
      const rust = await Tokenizer.fromPretrained(s.files(), { backend: rustTokenizerBackend }).catch((e: unknown) => e as Error);
      const js = await Tokenizer.fromPretrained(s.files(), { backend: jsTokenizerBackend }).catch((e: unknown) => e as Error);
      if (rust instanceof Error || js instanceof Error) {
        // A folder vlmkit refuses before any library runs it is refused alike.
        expect(String(js)).toBe(String(rust));
        counts.refusedByBoth++;
        return;
      }
      counts.tokenizers++;
      same('size', js.size, rust.size);
      for (let id = 0; id < rust.size + 3; id++) {
        same(`idToToken(${id})`, js.idToToken(id), rust.idToToken(id));
        const token = rust.idToToken(id);
        if (token !== undefined) same(`tokenToId(${JSON.stringify(token)})`, js.tokenToId(token), rust.tokenToId(token));
        counts.lookups++;
      }
      const json = JSON.parse(new TextDecoder().decode(await readAll(s.files(), 'tokenizer.json')));
      const texts = [...GENERIC, ...tokenTexts(rust, json), ...s.texts];
      for (const text of texts) {
        counts.texts++;
        for (const addSpecialTokens of [true, false]) {
          const ids = await rust.encode(text, { addSpecialTokens });
          same(`encode(${JSON.stringify(text)}, ${addSpecialTokens})`, await js.encode(text, { addSpecialTokens }), ids);
          counts.encodes++;
          for (const skipSpecialTokens of [false, true]) {
            same(
              `decode(${JSON.stringify(ids)}, ${skipSpecialTokens})`,
              await js.decode(ids, { skipSpecialTokens }),
              await rust.decode(ids, { skipSpecialTokens }),
            );
            counts.decodes++;
          }
        }
      }
      // Generated ids need not form text the tokenizer would make: every id alone, and runs of them.
      const all = Array.from({ length: rust.size }, (_, i) => i);
      for (const ids of [...all.map((i) => [i]), all, all.toReversed(), [rust.size + 5, 0, rust.size]]) {
        for (const skipSpecialTokens of [false, true]) {
          same(
            `decode(${JSON.stringify(ids)}, ${skipSpecialTokens})`,
            await js.decode(ids, { skipSpecialTokens }),
            await rust.decode(ids, { skipSpecialTokens }),
          );
          counts.decodes++;
        }
      }
      counts.differences += diffs.length;
      expect(diffs.slice(0, 12)).toEqual([]);
    });
  }
});

async function readAll(files: ModelFiles, name: string): Promise<Uint8Array> {
  const s = (await files.open(name))!;
  try {
    return await s.read(0, s.size);
  } finally {
    await s.close();
  }
}

describe('what the JS backend refuses', () => {
  it('names the construct, and lets the pre-tokenizer patterns of real tokenizers through', async () => {
    const { unsupportedRegex } = await import('./tokenizer-js.js');
    // Qwen2's and GPT-2's split patterns (tokenizer.json of Qwen/Qwen2-VL, openai-community/gpt2).
    expect(
      unsupportedRegex(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      ),
    ).toBeUndefined();
    expect(unsupportedRegex("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+")).toBeUndefined();
    expect(unsupportedRegex('a++b')).toBe('a possessive quantifier');
    expect(unsupportedRegex('\\p{L}{2}+')).toBe('a possessive quantifier');
    expect(unsupportedRegex('(?>ab)')).toBe('an atomic group (?>...)');
    expect(unsupportedRegex('\\Gx')).toBe('\\G');
    expect(unsupportedRegex('[a++]\\++')).toBeUndefined();
  });

  it('refuses a tokenizer.json it does not run as Rust does, by what it is, as TOKENIZER_ERROR', async () => {
    const base = JSON.parse(readFileSync(fixturePath('qwen3vl', 'tokenizer.json'), 'utf8')) as TokJson;
    type TokJson = { model: Record<string, unknown>; added_tokens: Record<string, unknown>[]; pre_tokenizer: unknown; decoder: unknown };
    const variants: [string, (j: TokJson) => void, RegExp][] = [
      [
        'a WordPiece model',
        (j) => {
          j.model = {
            type: 'WordPiece',
            unk_token: '<|endoftext|>',
            continuing_subword_prefix: '##',
            max_input_chars_per_word: 100,
            vocab: j.model.vocab,
          };
        },
        /model is "WordPiece"/,
      ],
      [
        'a single_word added token',
        (j) => {
          j.added_tokens[0]!.single_word = true;
        },
        /single_word/,
      ],
      [
        'a MergedWithPrevious split',
        (j) => {
          j.pre_tokenizer = { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false };
        },
        /MergedWithPrevious/,
      ],
      [
        'a CTC decoder',
        (j) => {
          j.decoder = { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true };
        },
        /decoder "CTC"/,
      ],
      [
        'an end_of_word_suffix',
        (j) => {
          j.model.end_of_word_suffix = '</w>';
        },
        /end_of_word_suffix/,
      ],
    ];
    for (const [what, change, message] of variants) {
      const j = structuredClone(base);
      change(j);
      const err = (() => {
        try {
          Tokenizer.fromJSON(JSON.stringify(j), {}, {}, { backend: jsTokenizerBackend });
        } catch (e) {
          return e;
        }
      })();
      expect(err, what).toMatchObject({ name: 'ProcessorError', code: 'TOKENIZER_ERROR' });
      expect((err as Error).message, what).toMatch(message);
      // The Rust backend takes every one of them.
      expect(() => Tokenizer.fromJSON(JSON.stringify(j), {}, {}, { backend: rustTokenizerBackend }), what).not.toThrow();
    }
  });
});

describe('Metaspace settings the fixtures do not cover', () => {
  const base = JSON.parse(readFileSync(fixturePath('ernie', 'tokenizer.json'), 'utf8'));
  for (const prepend_scheme of ['always', 'first', 'never']) {
    for (const split of [true, false]) {
      it(`prepend_scheme ${prepend_scheme}, split ${split}: same ids and text`, async () => {
        const j = structuredClone(base);
        j.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme, split };
        j.decoder = { type: 'Metaspace', replacement: '▁', prepend_scheme, split };
        const rust = Tokenizer.fromJSON(JSON.stringify(j), {}, {}, { backend: rustTokenizerBackend });
        const js = Tokenizer.fromJSON(JSON.stringify(j), {}, {}, { backend: jsTokenizerBackend });
        for (const text of GENERIC) {
          const ids = await rust.encode(text);
          expect(await js.encode(text)).toEqual(ids);
          expect(await js.decode(ids)).toBe(await rust.decode(ids));
        }
        const all = Array.from({ length: rust.size }, (_, i) => i);
        for (const ids of [...all.map((i) => [i]), all]) expect(await js.decode(ids)).toBe(await rust.decode(ids));
      });
    }
  }
});
