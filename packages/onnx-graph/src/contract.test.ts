import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  ContractError,
  type ContractProblem,
  checkTensors,
  contract,
  contractProblems,
  declaredTensors,
  declareInputs,
  dtypeVar,
  type FeedValues,
  feeds,
  required,
  type TensorName,
  tensorSpecs,
} from './contract.js';
import { Graph } from './graph.js';
import type { Value } from './value.js';

const STEP = contract({
  input_ids: ['int64', ['batch', 'seq'], { doc: 'the token ids' }],
  embeds: ['float32', ['rows', 'hidden']],
  attention_mask: ['int64', ['batch', 'total']],
  past: [
    dtypeVar('cache', ['float32', 'float16']),
    ['batch', 2, 'past', 4],
    { each: 'layer', name: 'past_key_values.{i}.{part}', parts: ['key', 'value'] },
  ],
  deepstack: ['float32', ['rows', 'hidden'], { each: 'level' }],
  logits_to_keep: ['int64', [], { optional: true, doc: 'logits for the last n' }],
});

const binding = { sizes: { hidden: 8 }, counts: { layer: 2, level: 1 }, dtypes: { cache: 'float16' } } as const;

const t = (dtype: string, dims: number[]) => ({ dtype, dims });

/** A valid set of tensors for `binding` with batch 2, seq 3, past 5. */
function valid(): Record<string, { dtype: string; dims: number[] }> {
  return {
    input_ids: t('int64', [2, 3]),
    embeds: t('float32', [0, 8]),
    attention_mask: t('int64', [2, 8]),
    'past_key_values.0.key': t('float16', [2, 2, 5, 4]),
    'past_key_values.0.value': t('float16', [2, 2, 5, 4]),
    'past_key_values.1.key': t('float16', [2, 2, 5, 4]),
    'past_key_values.1.value': t('float16', [2, 2, 5, 4]),
    deepstack_0: t('float32', [0, 8]),
  };
}

function problems(tensors: Record<string, { dtype: string; dims: number[] } | undefined>): ContractProblem[] {
  return contractProblems(STEP, tensors, binding);
}

describe('declarations follow the schema', () => {
  it('declared graph inputs are the schema: names, dtypes, dims (sizes bound), in schema order', () => {
    const g = new Graph();
    const x = declareInputs(g, STEP, { ...binding, include: { logits_to_keep: true } });
    const declared = g.snapshot().inputs.map((v) => ({ name: v.name, dtype: v.dtype, dims: [...v.shape] }));
    expect(declared).toEqual(
      tensorSpecs(STEP, { ...binding, include: { logits_to_keep: true } }).map((s) => ({
        name: s.name,
        dtype: s.dtype,
        dims: [...s.dims],
      })),
    );
    expect(declared).toEqual([
      { name: 'input_ids', dtype: 'int64', dims: ['batch', 'seq'] },
      { name: 'embeds', dtype: 'float32', dims: ['rows', 8] },
      { name: 'attention_mask', dtype: 'int64', dims: ['batch', 'total'] },
      { name: 'past_key_values.0.key', dtype: 'float16', dims: ['batch', 2, 'past', 4] },
      { name: 'past_key_values.0.value', dtype: 'float16', dims: ['batch', 2, 'past', 4] },
      { name: 'past_key_values.1.key', dtype: 'float16', dims: ['batch', 2, 'past', 4] },
      { name: 'past_key_values.1.value', dtype: 'float16', dims: ['batch', 2, 'past', 4] },
      { name: 'deepstack_0', dtype: 'float32', dims: ['rows', 8] },
      { name: 'logits_to_keep', dtype: 'int64', dims: [] },
    ]);
    // Returned by key: counted entries as arrays (of parts), the optional one when included.
    expect(x.input_ids.name).toBe('input_ids');
    expect(x.past.map((kv) => [kv.key.name, kv.value.name])).toEqual([
      ['past_key_values.0.key', 'past_key_values.0.value'],
      ['past_key_values.1.key', 'past_key_values.1.value'],
    ]);
    expect(x.deepstack.map((v) => v.name)).toEqual(['deepstack_0']);
    expect(x.logits_to_keep?.name).toBe('logits_to_keep');
    expectTypeOf(x.logits_to_keep).toEqualTypeOf<Value | undefined>();
    expectTypeOf(x.past[0]!.key).toEqualTypeOf<Value>();
  });

  it('an optional entry not included is not declared; a count of 0 declares none', () => {
    const g = new Graph();
    const x = declareInputs(g, STEP, { ...binding, counts: { layer: 1, level: 0 } });
    expect(g.snapshot().inputs.map((v) => v.name)).toEqual([
      'input_ids',
      'embeds',
      'attention_mask',
      'past_key_values.0.key',
      'past_key_values.0.value',
    ]);
    expect(x.logits_to_keep).toBeUndefined();
    expect(x.deepstack).toEqual([]);
  });

  it('a binding without a count, or a dtype variable outside its allowed set, is refused by name', () => {
    const e1 = (() => {
      try {
        tensorSpecs(STEP, { ...binding, counts: { level: 1 } });
      } catch (e) {
        return e as ContractError;
      }
    })();
    expect(e1).toBeInstanceOf(ContractError);
    expect([e1!.code, e1!.input, e1!.message]).toEqual(['BAD_BINDING', 'past', 'past: counts.layer is not given (how many past tensors)']);
    expect(() => tensorSpecs(STEP, { ...binding, dtypes: { cache: 'bfloat16' } })).toThrow(
      'past: dtypes.cache must be one of float32, float16, got bfloat16',
    );
  });

  it('names: a plain key is its name, a counted entry names each index (and part)', () => {
    expect(STEP.names.input_ids).toBe('input_ids');
    expect(STEP.names.past(3, 'value')).toBe('past_key_values.3.value');
    expect(STEP.names.deepstack(2)).toBe('deepstack_2');
    expectTypeOf(STEP.names.past(0, 'key')).toEqualTypeOf<`past_key_values.${number}.key` | `past_key_values.${number}.value`>();
    expectTypeOf<TensorName<typeof STEP.schema>>().toEqualTypeOf<
      | 'input_ids'
      | 'embeds'
      | 'attention_mask'
      | `past_key_values.${number}.key`
      | `past_key_values.${number}.value`
      | `deepstack_${number}`
      | 'logits_to_keep'
    >();
  });
});

describe('composing contracts', () => {
  it('required() makes an optional entry one a graph always declares; declaredTensors() lists what contracts declared', () => {
    const ENCODER = contract({ embeds: STEP.schema.embeds, logits_to_keep: required(STEP.schema.logits_to_keep) });
    const g = new Graph();
    declareInputs(g, ENCODER, { sizes: { hidden: 4 } });
    expect(declaredTensors(g)).toEqual([
      { key: 'embeds', name: 'embeds', dtype: 'float32', dims: ['rows', 4], optional: false },
      { key: 'logits_to_keep', name: 'logits_to_keep', dtype: 'int64', dims: [], optional: false, doc: 'logits for the last n' },
    ]);
    expect(declaredTensors(g).map((t) => t.name)).toEqual(g.snapshot().inputs.map((v) => v.name));
    expect(contractProblems(ENCODER, { embeds: t('float32', [0, 4]) }, { sizes: { hidden: 4 } }).map((p) => p.code)).toEqual([
      'MISSING_INPUT',
    ]);
    expect(declaredTensors(new Graph())).toEqual([]);
  });
});

describe('feeds follow the schema', () => {
  it('one generic feeds(): values by key in, tensors by name out; an optional left out is not fed', () => {
    const values: FeedValues<typeof STEP.schema, string> = {
      input_ids: 'ids',
      embeds: 'e',
      attention_mask: 'm',
      past: [
        { key: 'k0', value: 'v0' },
        { key: 'k1', value: 'v1' },
      ],
      deepstack: ['d0'],
    };
    expect(feeds(STEP, values)).toEqual({
      input_ids: 'ids',
      embeds: 'e',
      attention_mask: 'm',
      'past_key_values.0.key': 'k0',
      'past_key_values.0.value': 'v0',
      'past_key_values.1.key': 'k1',
      'past_key_values.1.value': 'v1',
      deepstack_0: 'd0',
    });
    expect(feeds(STEP, { ...values, logits_to_keep: 'n' }).logits_to_keep).toBe('n');
    // The same feeds with the tensor type given, as callers write them.
    expect(STEP.feeds<string>(values)).toEqual(feeds(STEP, values));
    // @ts-expect-error: a required entry cannot be left out
    feeds(STEP, { embeds: 'e', attention_mask: 'm', past: [], deepstack: [] });
  });
});

describe('host-side checks follow the schema', () => {
  it('valid tensors pass; the check binds symbols from the tensors', () => {
    expect(problems(valid())).toEqual([]);
    expect(() => checkTensors(STEP, valid(), binding)).not.toThrow();
  });

  it('a wrong dtype is refused by name', () => {
    expect(problems({ ...valid(), input_ids: t('int32', [2, 3]) })).toEqual([
      { code: 'DTYPE_MISMATCH', input: 'input_ids', message: 'input_ids must be int64 [batch, seq], got int32 [2, 3]' },
    ]);
    // A dtype variable: one of its allowed dtypes, the same for every tensor of the variable.
    const mixed = { ...valid(), 'past_key_values.1.value': t('float32', [2, 2, 5, 4]) };
    expect(contractProblems(STEP, mixed, { ...binding, dtypes: {} })).toEqual([
      {
        code: 'DTYPE_MISMATCH',
        input: 'past_key_values.1.value',
        message:
          'past_key_values.1.value must be float16 [2, 2, 5, 4] (batch, past as in input_ids, past_key_values.0.key), got float32 [2, 2, 5, 4]',
      },
    ]);
  });

  it('a wrong rank is refused by name', () => {
    expect(problems({ ...valid(), embeds: t('float32', [8]) })).toEqual([
      { code: 'RANK_MISMATCH', input: 'embeds', message: 'embeds must be float32 [rows, 8], got float32 [8]' },
    ]);
  });

  it('a size other than a fixed dim or a bound size is refused by name', () => {
    expect(problems({ ...valid(), embeds: t('float32', [0, 7]) })).toEqual([
      { code: 'DIM_MISMATCH', input: 'embeds', message: 'embeds must be float32 [rows, 8], got float32 [0, 7]' },
    ]);
  });

  it('a symbol with two sizes across tensors is refused, naming the tensor that fixed it', () => {
    expect(problems({ ...valid(), attention_mask: t('int64', [1, 8]) })).toEqual([
      {
        code: 'DIM_MISMATCH',
        input: 'attention_mask',
        message: 'attention_mask must be int64 [2, total] (batch as in input_ids), got int64 [1, 8]',
      },
    ]);
    expect(problems({ ...valid(), deepstack_0: t('float32', [3, 8]) })).toEqual([
      {
        code: 'DIM_MISMATCH',
        input: 'deepstack_0',
        message: 'deepstack_0 must be float32 [0, 8] (the shape of embeds), got float32 [3, 8]',
      },
    ]);
    const e = (() => {
      try {
        checkTensors(STEP, { ...valid(), 'past_key_values.1.key': t('float16', [2, 2, 6, 4]) }, binding);
      } catch (x) {
        return x as ContractError;
      }
    })();
    expect(e).toBeInstanceOf(ContractError);
    expect([e!.code, e!.input]).toEqual(['DIM_MISMATCH', 'past_key_values.1.key']);
    expect(e!.message).toContain('past_key_values.1.key must be float16 [2, 2, 5, 4]');
  });

  it('missing and unknown tensors are named; every problem is listed', () => {
    const { input_ids: _ids, ...rest } = valid();
    const found = problems({ ...rest, token_type_ids: t('int64', [2, 3]), 'past_key_values.2.key': t('float16', [2, 2, 5, 4]) });
    expect(found.map((p) => [p.code, p.input])).toEqual([
      ['UNKNOWN_INPUT', 'token_type_ids'],
      ['MISSING_INPUT', 'input_ids'],
      ['UNKNOWN_INPUT', 'past_key_values.2.key'],
    ]);
    expect(found[0]!.message).toBe(
      'token_type_ids is not an input: expected some of input_ids, embeds, attention_mask, past_key_values.{i}.{part}, deepstack_{i}, logits_to_keep',
    );
    expect(found[1]!.message).toBe('input_ids is missing: the token ids, int64 [batch, seq]');
    expect(found[2]!.message).toContain('past has 2');
  });
});
