import { describe, expect, it } from 'vitest';
import { type ConfigErrorCode, type ConfigObject, fields } from './index.js';
import { errorOf } from './test-utils/error-of.js';

/** The error's code, field path and message, checked together: the message starts with the config and names the field. */
function expectError(read: () => unknown, code: ConfigErrorCode, field: string, message: RegExp): void {
  const e = errorOf(read);
  expect([e.code, e.field]).toEqual([code, field]);
  expect(e.message.startsWith(`test config: ${field}`)).toBe(true);
  expect(e.message).toMatch(message);
}

const root = (json: unknown): ConfigObject => fields(json, 'test config');
const text = (json: Record<string, unknown>): ConfigObject => root({ text_config: json }).obj('text_config');

describe('fields', () => {
  it('refuses what is not a JSON object, naming the config', () => {
    for (const bad of [null, 3, 'x', [1]]) {
      const e = errorOf(() => root(bad));
      expect([e.code, e.field, e.config]).toEqual(['INVALID_CONFIG', '', 'test config']);
      expect(e.message).toBe(`test config: expected a JSON object, found ${JSON.stringify(bad)}.`);
    }
    expect(() => fields(3, 'test config', 'vision_config')).toThrow('test config: vision_config must be a JSON object, found 3.');
  });

  it('path prefixes field names; has/raw treat null as absent', () => {
    const c = fields({ a: null, b: 0 }, 'test config', 'vision_config');
    expect(c.field('b')).toBe('vision_config.b');
    expect([c.has('a'), c.has('b'), c.has('c')]).toEqual([false, true, false]);
    expect([c.raw('a'), c.raw('b')]).toEqual([undefined, 0]);
    expectError(() => c.int('a'), 'MISSING_CONFIG_FIELD', 'vision_config.a', /is missing; expected a positive integer\.$/);
  });
});

describe('int', () => {
  const c = text({ n: 4, zero: 0, neg: -2, f: 1.5, s: '4', big: 9 });
  it('reads integers >= 1 by default, min/max when given', () => {
    expect(c.int('n')).toBe(4);
    expect(c.int('zero', { min: 0 })).toBe(0);
    expect(c.int('neg', { min: -5 })).toBe(-2);
    expect(c.int('neg', { min: Number.NEGATIVE_INFINITY })).toBe(-2);
    expect(c.int('big', { max: 9 })).toBe(9);
    expect(c.optionalInt('n')).toBe(4);
    expect(c.optionalInt('absent')).toBeUndefined();
  });
  it('missing, wrong type, out of range', () => {
    expectError(() => c.int('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /is missing; expected a positive integer/);
    expectError(() => c.int('s'), 'INVALID_CONFIG', 'text_config.s', /must be a positive integer, found "4"\.$/);
    expectError(() => c.int('f'), 'INVALID_CONFIG', 'text_config.f', /found 1\.5/);
    expectError(() => c.int('zero'), 'INVALID_CONFIG', 'text_config.zero', /must be a positive integer, found 0/);
    expectError(() => c.int('neg', { min: 0 }), 'INVALID_CONFIG', 'text_config.neg', /must be an integer >= 0, found -2/);
    expectError(() => c.int('big', { min: 1, max: 8 }), 'INVALID_CONFIG', 'text_config.big', /must be an integer in \[1, 8\], found 9/);
    expectError(() => c.optionalInt('zero'), 'INVALID_CONFIG', 'text_config.zero', /found 0/);
    expectError(
      () => c.int('f', { min: Number.NEGATIVE_INFINITY }),
      'INVALID_CONFIG',
      'text_config.f',
      /must be an integer, found 1\.5\.$/,
    );
  });
  it('a default is used only when the field is absent or null, and is recorded with its source', () => {
    const d = text({ k: null, given: 2 });
    expect(d.int('k', { default: 6, from: 'HF Ernie4_5_VLMoeTextConfig' })).toBe(6);
    expect(d.int('given', { default: 6, from: 'HF Ernie4_5_VLMoeTextConfig' })).toBe(2);
    expect(d.defaultsApplied).toEqual([{ field: 'text_config.k', value: 6, from: 'HF Ernie4_5_VLMoeTextConfig' }]);
  });
  it('a default without its source does not type-check, and is not used', () => {
    // @ts-expect-error a default must say where it comes from
    expectError(() => text({}).int('k', { default: 6 }), 'MISSING_CONFIG_FIELD', 'text_config.k', /is missing/);
  });
});

describe('num, positive', () => {
  const c = text({ x: -0.5, eps: 1e-6, zero: 0, s: '1e-5', inf: Number.POSITIVE_INFINITY });
  it('reads finite numbers and positive numbers', () => {
    expect(c.num('x')).toBe(-0.5);
    expect(c.num('x', { min: -1, max: 0 })).toBe(-0.5);
    expect(c.positive('eps')).toBe(1e-6);
    expect(c.positive('absent', { default: 1e-5, from: 'HF' })).toBe(1e-5);
    expect(c.optionalPositive('absent')).toBeUndefined();
    expect(c.optionalNum('x')).toBe(-0.5);
  });
  it('missing, wrong type, out of range', () => {
    expectError(() => c.num('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /is missing; expected a finite number/);
    expectError(() => c.num('s'), 'INVALID_CONFIG', 'text_config.s', /must be a finite number, found "1e-5"/);
    expectError(() => c.num('inf'), 'INVALID_CONFIG', 'text_config.inf', /must be a finite number/);
    expectError(() => c.num('x', { min: 0 }), 'INVALID_CONFIG', 'text_config.x', /must be a number >= 0, found -0\.5/);
    expectError(() => c.num('eps', { max: 1e-7 }), 'INVALID_CONFIG', 'text_config.eps', /must be a number <= 1e-7/);
    expectError(() => c.positive('zero'), 'INVALID_CONFIG', 'text_config.zero', /must be a positive number, found 0/);
    expectError(() => c.positive('x'), 'INVALID_CONFIG', 'text_config.x', /found -0\.5/);
    expectError(() => c.positive('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /expected a positive number/);
    expectError(() => c.optionalPositive('s'), 'INVALID_CONFIG', 'text_config.s', /"1e-5"/);
  });
});

describe('bool, str, oneOf', () => {
  const c = text({ t: true, s: 'silu', n: 1, yes: 'yes' });
  it('reads them, defaults with a source', () => {
    expect(c.bool('t')).toBe(true);
    expect(c.bool('absent', { default: false, from: 'HF' })).toBe(false);
    expect(c.optionalBool('absent')).toBeUndefined();
    expect(c.str('s')).toBe('silu');
    expect(c.optionalStr('s')).toBe('silu');
    expect(c.str('absent', { default: 'x', from: 'HF' })).toBe('x');
    expect(c.oneOf('s', ['silu', 'gelu'])).toBe('silu');
    expect(c.oneOf('absent', ['silu', 'gelu'], { default: 'gelu', from: 'HF' })).toBe('gelu');
  });
  it('missing, wrong type, a value not in the list (with its code and reason)', () => {
    expectError(() => c.bool('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /expected true or false/);
    expectError(() => c.bool('yes'), 'INVALID_CONFIG', 'text_config.yes', /must be true or false, found "yes"/);
    expectError(() => c.optionalBool('n'), 'INVALID_CONFIG', 'text_config.n', /found 1/);
    expectError(() => c.str('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /expected a string/);
    expectError(() => c.str('n'), 'INVALID_CONFIG', 'text_config.n', /must be a string, found 1/);
    expectError(() => c.oneOf('n', ['silu']), 'INVALID_CONFIG', 'text_config.n', /must be one of 'silu', found 1/);
    expectError(() => c.oneOf('absent', ['silu']), 'MISSING_CONFIG_FIELD', 'text_config.absent', /expected one of 'silu'/);
    expectError(
      () => c.oneOf('yes', ['a', 'b']),
      'INVALID_CONFIG',
      'text_config.yes',
      /"yes" is not supported; expected one of 'a', 'b'\.$/,
    );
    expectError(
      () => c.oneOf('s', ['gelu'], { code: 'UNSUPPORTED_CONFIG', why: 'Only GELU is built.' }),
      'UNSUPPORTED_CONFIG',
      'text_config.s',
      /"silu" is not supported; expected one of 'gelu'\. Only GELU is built\.$/,
    );
  });
});

describe('pair, ints, intPairs, strings, square', () => {
  const c = text({ one: 64, two: [64, 32], single: [8], three: [1, 2, 3], neg: [-1, 2], s: '4', sec: [22, 22, 20] });
  it('pair: one int for both, a list of one or two', () => {
    expect(c.pair('one')).toEqual([64, 64]);
    expect(c.pair('two')).toEqual([64, 32]);
    expect(c.pair('single')).toEqual([8, 8]);
    expect(c.pair('absent', { default: [1536, 512], from: 'HF' })).toEqual([1536, 512]);
    expect(c.pair('absent', { default: 64, from: 'HF' })).toEqual([64, 64]);
  });
  it('pair: missing, wrong type, out of range', () => {
    expectError(
      () => c.pair('absent'),
      'MISSING_CONFIG_FIELD',
      'text_config.absent',
      /expected an integer >= 0 or a list \[text, vision\]/,
    );
    expectError(() => c.pair('three'), 'INVALID_CONFIG', 'text_config.three', /found \[1,2,3\]/);
    expectError(() => c.pair('s'), 'INVALID_CONFIG', 'text_config.s', /found "4"/);
    expectError(() => c.pair('neg'), 'INVALID_CONFIG', 'text_config.neg', /found \[-1,2\]/);
    expectError(() => c.pair('two', { min: 33 }), 'INVALID_CONFIG', 'text_config.two', /integer >= 33/);
  });
  it('ints and strings: lists, with a length and range or a value set', () => {
    expect(c.ints('sec', { length: 3, min: 0 })).toEqual([22, 22, 20]);
    expect(c.ints('neg')).toEqual([-1, 2]);
    expect(c.ints('absent', { default: [12, 15], from: 'HF' })).toEqual([12, 15]);
    expectError(() => c.ints('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /expected a list of integers/);
    expectError(() => c.ints('two', { length: 3 }), 'INVALID_CONFIG', 'text_config.two', /must be a list of 3 integers, found \[64,32\]/);
    expectError(() => c.ints('neg', { min: 0 }), 'INVALID_CONFIG', 'text_config.neg', /integers >= 0, found \[-1,2\]/);
    expectError(() => c.ints('one'), 'INVALID_CONFIG', 'text_config.one', /found 64/);
    const l = text({ t: ['dense', 'sparse'], bad: ['dense', 'moe'], n: [1] });
    expect(l.strings('t', { values: ['dense', 'sparse'], length: 2 })).toEqual(['dense', 'sparse']);
    expectError(() => l.strings('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /a list of strings/);
    expectError(() => l.strings('n'), 'INVALID_CONFIG', 'text_config.n', /must be a list of strings, found \[1\]/);
    expectError(
      () => l.strings('bad', { values: ['dense', 'sparse'] }),
      'INVALID_CONFIG',
      'text_config.bad',
      /a list of 'dense' or 'sparse', found \["dense","moe"\]/,
    );
    expectError(() => l.strings('t', { length: 3 }), 'INVALID_CONFIG', 'text_config.t', /a list of 3 strings/);
  });
  it('intPairs: lists of [int, int]', () => {
    const p = text({
      map: [
        [-19, 9],
        [-1, 0],
      ],
      short: [[1]],
      neg: [[-1, 2]],
    });
    expect(p.intPairs('map')).toEqual([
      [-19, 9],
      [-1, 0],
    ]);
    expect(p.intPairs('absent', { default: [[1, 2]], from: 'HF' })).toEqual([[1, 2]]);
    expectError(() => p.intPairs('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /a list of \[int, int\] pairs/);
    expectError(() => p.intPairs('short'), 'INVALID_CONFIG', 'text_config.short', /found \[\[1\]\]/);
    expectError(() => p.intPairs('neg', { min: 1 }), 'INVALID_CONFIG', 'text_config.neg', /entries >= 1/);
  });
  it('square: an int or [n, n]', () => {
    const s = text({ p: 14, q: [16, 16], r: [14, 16], z: 0 });
    expect([s.square('p'), s.square('q'), s.square('absent', { default: 3, from: 'HF' })]).toEqual([14, 16, 3]);
    expectError(() => s.square('r'), 'INVALID_CONFIG', 'text_config.r', /a positive integer or a square \[n, n\], found \[14,16\]/);
    expectError(() => s.square('z'), 'INVALID_CONFIG', 'text_config.z', /found 0/);
    expectError(() => s.square('absent'), 'MISSING_CONFIG_FIELD', 'text_config.absent', /is missing/);
  });
});

describe('obj, fail', () => {
  it('nested objects carry their path; an absent optional object is undefined', () => {
    const c = root({ text_config: { rope_parameters: { rope_theta: 1e6 } }, list: [] });
    const rope = c.obj('text_config').obj('rope_parameters');
    expect(rope.path).toBe('text_config.rope_parameters');
    expect(rope.positive('rope_theta')).toBe(1e6);
    expect(c.optionalObj('vision_config')).toBeUndefined();
    expectError(() => c.obj('vision_config'), 'MISSING_CONFIG_FIELD', 'vision_config', /is missing; expected a JSON object/);
    expectError(() => c.obj('list'), 'INVALID_CONFIG', 'list', /must be a JSON object, found \[\]/);
    expectError(() => rope.int('x'), 'MISSING_CONFIG_FIELD', 'text_config.rope_parameters.x', /is missing/);
  });
  it('fail throws the given code about a field of this object, or the object itself', () => {
    const c = text({ a: 1 });
    expectError(
      () => c.fail('INCONSISTENT_CONFIG', 'a', 'disagrees with b.'),
      'INCONSISTENT_CONFIG',
      'text_config.a',
      /a disagrees with b\.$/,
    );
    const e = errorOf(() => c.fail('UNSUPPORTED_CONFIG', '', 'is not built.'));
    expect([e.code, e.field, e.message]).toEqual(['UNSUPPORTED_CONFIG', 'text_config', 'test config: text_config is not built.']);
  });
  it('defaults applied anywhere in the file are listed once, in order', () => {
    const c = root({ text_config: {}, vision_config: {} });
    c.obj('text_config').int('moe_k', { default: 6, from: 'HF Ernie4_5_VLMoeTextConfig' });
    c.obj('vision_config').square('patch_size', { default: 14, from: 'HF Ernie4_5_VLMoeVisionConfig' });
    expect(c.defaultsApplied.map((d) => `${d.field}=${String(d.value)} (${d.from})`)).toEqual([
      'text_config.moe_k=6 (HF Ernie4_5_VLMoeTextConfig)',
      'vision_config.patch_size=14 (HF Ernie4_5_VLMoeVisionConfig)',
    ]);
  });
  it('long values are cut in messages', () => {
    const e = errorOf(() => text({ v: 'x'.repeat(200) }).int('v'));
    expect(e.message.length).toBeLessThan(160);
    expect(e.message).toMatch(/\.\.\.\.$/);
  });
});
