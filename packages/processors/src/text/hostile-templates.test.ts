import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessorError, type ProcessorErrorCode } from '../errors.js';
import { fixturePath, readJson } from '../test-utils/fixtures.js';
import { type ApplyChatTemplateOptions, type ChatMessage, ChatTemplate } from './chat-template.js';

type Nested = { before: string; open: string; inner: string; close: string; depth: number; after: string };

/** One case of test-fixtures/processors/templates/cases.json (tools/processors/make_template_cases.py). */
interface Case {
  name: string;
  template: string | Nested;
  messages: ChatMessage[];
  options: { add_generation_prompt?: boolean; tools?: Record<string, unknown>[] };
  hf: { rendered: string } | { renderedLength: number } | { error: string; message: string } | { hangs: true };
}

const doc = readJson<{ specialTokens: Record<string, unknown>; templates: Record<string, string>; cases: Case[] }>(
  'templates',
  'cases.json',
);
const specialTokens = Object.fromEntries(Object.entries(doc.specialTokens).filter(([, v]) => typeof v === 'string')) as Record<
  string,
  string
>;

function source(t: string | Nested): string {
  if (typeof t !== 'string') return t.before + t.open.repeat(t.depth) + t.inner + t.close.repeat(t.depth) + t.after;
  const file = doc.templates[t];
  return file === undefined ? t : readFileSync(join(fixturePath('..', '..'), file), 'utf8');
}

/**
 * Where vlmkit throws instead of rendering HF's string: HF raised (the code and the message that
 * names the fault), HF hung or built a string past the output limit (a TEMPLATE_LIMIT naming the
 * limit), or HF rendered a malformed message that vlmkit refuses by name. Every other case must
 * render HF's string exactly.
 */
const THROWS: Record<string, [ProcessorErrorCode, RegExp]> = {
  'undefined.attr': ['TOKENIZER_ERROR', /'foo' is undefined/],
  'undefined[key]': ['TOKENIZER_ERROR', /'foo' is undefined/],
  "missing attribute's attribute": ['TOKENIZER_ERROR', /'dict object' has no attribute 'foo'/],
  'index past the end, then attribute': ['TOKENIZER_ERROR', /list object has no element 5/],
  'undefined + string': ['TOKENIZER_ERROR', /'foo' is undefined/],
  'undefined + 1': ['TOKENIZER_ERROR', /'foo' is undefined/],
  'undefined | tojson': ['TOKENIZER_ERROR', /Undefined is not JSON serializable/],
  'undefined called': ['TOKENIZER_ERROR', /'foo' is undefined/],
  'string + number': ['TOKENIZER_ERROR', /can only concatenate str \(not "int"\) to str/],
  'integer past 2^53': ['TOKENIZER_ERROR', /an integer past 2\^53 \(about 1152921504606847000\) cannot be printed exactly/],
  'method of undefined': ['TOKENIZER_ERROR', /'foo' is undefined/],
  'raise_exception with a message': ['TOKENIZER_ERROR', /raised an error: user first/],
  'granite template, role a number': ['INVALID_INPUT', /message 0: role must be a string; got number/],
  'ernie template, role a number': ['INVALID_INPUT', /message 0: role must be a string; got number/],
  'ernie template, no role': ['INVALID_INPUT', /message 0: role must be a string; got none/],
  'ernie template, content null': ['INVALID_INPUT', /message 0: content must be a string or a list of parts.*got null/],
  'granite template, content null': ['INVALID_INPUT', /message 0: content must be a string or a list of parts.*got null/],
  'ernie template, no content': ['INVALID_INPUT', /message 0: content must be .*got none/],
  'ernie template, content a number': ['INVALID_INPUT', /message 0: content must be .*got number/],
  'ernie template, part without type': ['INVALID_INPUT', /message 0, content part 0: type must be a string.*got none/],
  'granite template, part without type': ['INVALID_INPUT', /message 0, content part 0: type must be a string.*got none/],
  'ernie template, text part with a number': [
    'INVALID_INPUT',
    /message 0, content part 0: a text part's text must be a string; got number/,
  ],
  'ernie template, part a string': ['INVALID_INPUT', /message 0, content part 0 must be an object.*got string/],
  'ernie template, message a string': ['INVALID_INPUT', /message 0 must be an object \{ role, content \}; got string/],
  'range(1e9)': ['TEMPLATE_LIMIT', /range\(\) of 1000000000 items.*MAX_RANGE/],
  'range(100001)': ['TEMPLATE_LIMIT', /range\(\) of 100001 items.*MAX_RANGE/],
  // Whichever comes first on the machine: 2 s or 10^6 iterations.
  'nested range(100000) loops': [
    'TEMPLATE_LIMIT',
    /time limit \(limits\.maxRenderMs: 2000\)|loop iterations than the limit \(limits\.maxIterations: 1000000\)/,
  ],
  'string multiplied to 100 MB': ['TEMPLATE_LIMIT', /100000000 characters.*limits\.maxOutputLength: 4194304/],
  'string multiplied to 100 MB, not printed': ['TEMPLATE_LIMIT', /100000000 characters.*limits\.maxOutputLength/],
  'output of 10 MB from a loop': ['TEMPLATE_LIMIT', /characters, over the output limit.*limits\.maxOutputLength/],
  'string doubled 40 times': ['TEMPLATE_LIMIT', /characters, over the output limit.*limits\.maxOutputLength/],
  'slow loop within the iteration limit': ['TEMPLATE_LIMIT', /time limit.*limits\.maxRenderMs: 2000/],
  'macro calling itself': ['TEMPLATE_LIMIT', /nests blocks or macro calls more than 1000 deep/],
  'if nested 5000 deep': ['TEMPLATE_LIMIT', /nests too deeply to parse/],
  'parentheses nested 5000 deep': ['TEMPLATE_LIMIT', /nests too deeply to parse/],
};

function apply(c: Case, extra: ApplyChatTemplateOptions = {}): string {
  const template = new ChatTemplate(source(c.template), specialTokens);
  const { add_generation_prompt = false, tools } = c.options;
  return template.apply(c.messages, { addGenerationPrompt: add_generation_prompt, ...(tools && { tools }), ...extra });
}

describe('chat templates and messages vs HF 5.17 (test-fixtures/processors/templates)', () => {
  it('the case file covers every expectation and every HF failure', () => {
    const names = new Set(doc.cases.map((c) => c.name));
    expect(Object.keys(THROWS).filter((n) => !names.has(n))).toEqual([]);
    const unhandled = doc.cases.filter((c) => !('rendered' in c.hf) && !(c.name in THROWS)).map((c) => c.name);
    expect(unhandled).toEqual([]);
  });

  // A generous time limit: range(100000) takes about a second in @huggingface/jinja on a loaded
  // machine, and these cases are about what is rendered.
  const renders = doc.cases.filter((c) => !(c.name in THROWS));
  it.each(renders.map((c) => [c.name, c] as const))('%s: renders what HF renders', (_, c) => {
    expect(apply(c, { limits: { maxRenderMs: 60_000 } })).toBe((c.hf as { rendered: string }).rendered);
  });

  const throws = doc.cases.filter((c) => c.name in THROWS);
  it.each(throws.map((c) => [c.name, c] as const))('%s: fails by name, in bounded time', (_, c) => {
    const [code, message] = THROWS[c.name]!;
    const start = Date.now();
    let error: unknown;
    // Cases about another limit get a generous time limit, so that a loaded machine cannot make the
    // 2 s default fire first; the cases about the time limit keep the default.
    const timed = message.source.includes('maxRenderMs');
    try {
      apply(c, timed ? {} : { limits: { maxRenderMs: 60_000 } });
    } catch (e) {
      error = e;
    }
    expect(Date.now() - start).toBeLessThan(20_000);
    expect(error).toBeInstanceOf(ProcessorError);
    expect((error as ProcessorError).code).toBe(code);
    expect((error as ProcessorError).message).toMatch(message);
  });
});

describe('template limits', () => {
  const loop = (n: number) => `{% for i in range(${n}) %}{% for j in range(${n}) %}{% endfor %}{% endfor %}ok`;

  it('are options of ChatTemplate and of each apply, and name how to raise them', () => {
    // 90,000 iterations: about a second in @huggingface/jinja, more on a loaded machine.
    const slowOk = { maxRenderMs: 60_000 };
    expect(new ChatTemplate(loop(300), {}, { limits: slowOk }).apply([])).toBe('ok');
    expect(() => new ChatTemplate(loop(300), {}, { limits: { ...slowOk, maxIterations: 1000 } }).apply([])).toThrow(
      /limits\.maxIterations: 1000\); raise it/,
    );
    const small = new ChatTemplate("{{ 'x' * 100 }}", {}, { limits: { maxOutputLength: 10 } });
    expect(() => small.apply([])).toThrow(/100 characters, over the output limit \(limits\.maxOutputLength: 10\)/);
    expect(small.apply([], { limits: { maxOutputLength: 100 } })).toBe('x'.repeat(100));
  });

  it('a loop over a string longer than the item limit fails before splitting it', () => {
    const t = new ChatTemplate("{% for c in 'abcdefghijklmnop' %}{{ c }}{% endfor %}", {}, { limits: { maxIterations: 10 } });
    expect(() => t.apply([])).toThrow(/a list of 16 items, over the item limit \(limits\.maxIterations: 10\)/);
  });

  it('the time limit stops a render that stays within the other limits', () => {
    const slow = new ChatTemplate(
      "{% set big = 'a' * 1000000 %}{% for i in range(100000) %}{% if 'ab' in big %}x{% endif %}{% endfor %}",
      {},
      { limits: { maxRenderMs: 100 } },
    );
    const start = Date.now();
    expect(() => slow.apply([])).toThrow(/time limit \(limits\.maxRenderMs: 100\)/);
    expect(Date.now() - start).toBeLessThan(10_000);
  });

  it('refuses a limit that is not a positive number, by name', () => {
    expect(() => new ChatTemplate('x', {}, { limits: { maxRenderMs: 0 } })).toThrow(
      /options\.limits\.maxRenderMs must be a positive number/,
    );
    expect(() => new ChatTemplate('x').apply([], { limits: { maxOutputs: 1 } as never })).toThrow(/maxOutputs is not a template limit/);
  });
});

describe('template values', () => {
  it('a decoded image in a part reaches the template as a stand-in, not one value per byte', () => {
    const t = new ChatTemplate(
      '{% for m in messages %}{% for p in m.content %}{{ p.type }}:{{ p.image is defined }};{% endfor %}{% endfor %}',
    );
    const image = { width: 4000, height: 4000, data: new Uint8Array(4000 * 4000 * 3) };
    const start = Date.now();
    expect(
      t.apply([
        {
          role: 'user',
          content: [
            { type: 'image', image },
            { type: 'text', text: 'hi' },
          ],
        },
      ]),
    ).toBe('image:True;text:False;');
    expect(Date.now() - start).toBeLessThan(5_000);
  });

  it('a message nested past the value depth limit is refused by name', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    expect(() => new ChatTemplate('{{ messages[0].extra | tojson }}').apply([{ role: 'user', content: 'hi', extra: deep }])).toThrow(
      /messages\[0\]\.extra\.d\.d.*nests more than 1000 objects or lists deep/,
    );
  });

  it('a message that refers to itself is refused by name', () => {
    const m: ChatMessage = { role: 'user', content: 'hi' };
    m.self = m;
    expect(() => new ChatTemplate('{{ messages }}').apply([m])).toThrow(/messages\[0\]\.self refers to itself/);
  });
});

// What jinja2 gives in HF 5.17's sandbox (transformers.utils.chat_template_utils._compile_jinja_template(src)
// .render(...), run once by hand): JavaScript's arithmetic and whitespace set differ on these.
describe('Python semantics the engine does not have by itself', () => {
  const render = (src: string, variables: Record<string, unknown> = {}) => new ChatTemplate(src).apply([], { variables });

  it('division and modulo by zero raise as ZeroDivisionError does; % takes the divisor sign', () => {
    expect(() => render('{{ 1 / 0 }}')).toThrow(/division by zero/);
    expect(() => render('{{ 7 % 0 }}')).toThrow(/integer modulo by zero/);
    expect(() => render('{{ 7 // 0 }}')).toThrow(/integer division or modulo by zero/);
    expect(render('{{ -1 % 3 }}|{{ 5.5 % -2 }}|{{ 7 // 2 }}')).toBe('2|-0.5|3');
  });

  it('trim, strip, lstrip and rstrip use Python whitespace (U+FEFF kept, U+001F / U+0085 stripped) and chars', () => {
    expect(render('[{{ x | trim }}]', { x: '\ufeff a \x1f' })).toBe('[\ufeff a]');
    expect(render('[{{ x.strip() }}|{{ x.lstrip() }}|{{ x.rstrip() }}|{{ y.strip("xy") }}]', { x: '\x85 a \ufeff', y: 'xxhiyx' })).toBe(
      '[a \ufeff|a \ufeff|\x85 a \ufeff|hi]',
    );
  });

  it('a template holding a character the two engines trim differently (a BOM) is refused by name', () => {
    expect(() => new ChatTemplate('\ufeff{{ 1 }}')).toThrow(/U\+FEFF \(a byte-order mark\) at character 0/);
    expect(() => new ChatTemplate('a\x1f{%- if true %}b{% endif %}')).toThrow(/U\+001F at character 1/);
  });
});
