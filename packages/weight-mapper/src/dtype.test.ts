// A parameter stored as an integer (or other non-float) tensor is refused by name: the graphs cast
// parameters to float, so an int8 weight with its bitsandbytes scale, I32 embeddings or a U8 norm would
// run with exit 0 and logits off by orders of magnitude.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checkpoint, type DType, writeSafetensors } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { MappingError } from './errors.js';
import { FLOAT_PARAMETER_DTYPES, type MappingTable, mapCheckpoint } from './mapping.js';
import { pack, tensor } from './source.js';

const TYPED: Record<string, (n: number) => ArrayLike<number> | ArrayLike<bigint>> = {
  F32: (n) => new Float32Array(n),
  F16: (n) => new Uint16Array(n),
  BF16: (n) => new Uint16Array(n),
  I8: (n) => new Int8Array(n),
  U8: (n) => new Uint8Array(n),
  I32: (n) => new Int32Array(n),
  I64: (n) => new BigInt64Array(n),
  F64: (n) => new Float64Array(n),
};

async function checkpoint(tensors: Record<string, DType>): Promise<Checkpoint> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-dtype-'));
  const path = join(dir, 'model.safetensors');
  const entries = Object.fromEntries(
    Object.entries(tensors).map(([name, dtype]) => [name, { dtype, shape: [2, 2], data: TYPED[dtype]!(4) }]),
  );
  await writeSafetensors(path, entries as Parameters<typeof writeSafetensors>[1]);
  return Checkpoint.open(path);
}

function table(
  names: string[],
): MappingTable & { components: { c: { name: string; shape: number[]; source: ReturnType<typeof tensor> }[] } } {
  return {
    name: 'test',
    renames: [],
    ignore: [],
    dtypes: FLOAT_PARAMETER_DTYPES,
    components: { c: names.map((n) => ({ name: n, shape: [2, 2], source: tensor(n) })) },
  };
}

describe('parameter dtypes: a table that allows F32 / F16 / BF16 (as the ERNIE and Granite tables do)', () => {
  it('the ERNIE and Granite tables allow only float parameters', async () => {
    const { ernie45VlMapping, granite4VisionMapping } = await import('./index.js');
    const none = { parameters: [] };
    const tied = { parameters: [], config: { tieWordEmbeddings: true, moe: { numExperts: [1, 1] as const } } };
    expect(ernie45VlMapping({ vision: none, resampler: none, decoder: tied }).dtypes).toEqual(['F32', 'F16', 'BF16']);
    expect(granite4VisionMapping({ vision: none, projectors: none, decoder: tied }).dtypes).toEqual(['F32', 'F16', 'BF16']);
  });

  it('a table without dtypes (the generic engine) maps any dtype', async () => {
    const ckpt = await checkpoint({ 'w.weight': 'I64' });
    const t = { ...table(['w.weight']), dtypes: undefined };
    expect(mapCheckpoint(ckpt, t).report.parameters[0]!.dtype).toBe('I64');
  });

  it.each(['F32', 'F16', 'BF16'] as const)('%s maps', async (dtype) => {
    const ckpt = await checkpoint({ 'w.weight': dtype });
    expect(mapCheckpoint(ckpt, table(['w.weight'])).report.parameters[0]!.dtype).toBe(dtype);
  });

  it.each(['I8', 'U8', 'I32', 'I64', 'F64'] as const)('%s is refused with UNSUPPORTED_DTYPE naming the tensor and file', async (dtype) => {
    const ckpt = await checkpoint({ 'w.weight': 'F32', 'o_proj.weight': dtype });
    const e = (() => {
      try {
        mapCheckpoint(ckpt, table(['w.weight', 'o_proj.weight']));
      } catch (x) {
        return x as MappingError;
      }
      throw new Error('mapped');
    })();
    expect(e).toBeInstanceOf(MappingError);
    expect(e.code).toBe('UNSUPPORTED_DTYPE');
    expect(e.message).toMatch(
      new RegExp(`tensor 'o_proj\\.weight' in .*model\\.safetensors is ${dtype}; test parameters must be F32, F16, BF16`),
    );
    expect(e.report!.mismatched.map((m) => m.name)).toEqual(['o_proj.weight']);
  });

  it('names bitsandbytes int8 (SCB scales) and GPTQ/AWQ layouts when their side tensors are present', async () => {
    const bnb = await checkpoint({ 'o_proj.weight': 'I8', 'o_proj.SCB': 'F32' });
    expect(() => mapCheckpoint(bnb, table(['o_proj.weight']))).toThrow(/bitsandbytes int8 checkpoint \(SCB scales\)/);
    const gptq = await checkpoint({ 'q.weight': 'I32', 'q.qweight': 'I32', 'q.scales': 'F16' });
    expect(() => mapCheckpoint(gptq, table(['q.weight']))).toThrow(/GPTQ\/AWQ checkpoint/);
  });

  it('a packed parameter made of integer parts is refused too', async () => {
    const ckpt = await checkpoint({ 'q.weight': 'I32', 'k.weight': 'I32' });
    const t = {
      name: 'test',
      renames: [],
      ignore: [],
      dtypes: FLOAT_PARAMETER_DTYPES,
      components: { c: [{ name: 'qk.weight', shape: [4, 2], source: pack('q.weight', 'k.weight') }] },
    };
    expect(() => mapCheckpoint(ckpt, t)).toThrow(/tensor 'q\.weight' .* is I32/);
  });
});

describe('a config with fewer layers than the checkpoint', () => {
  it('is EXTRA_LAYERS naming the first layer beyond the config, not a silent ignore', async () => {
    const ckpt = await checkpoint({
      'model.layers.0.w.weight': 'F32',
      'model.layers.1.w.weight': 'F32',
      'model.layers.2.w.weight': 'F32',
      'model.extra.weight': 'F32',
    });
    const two = { ...table(['model.layers.0.w.weight', 'model.layers.1.w.weight']), dtypes: undefined };
    expect(() => mapCheckpoint(ckpt, two)).toThrow(
      /has tensors of model\.layers\.2 \(e\.g\. 'model\.layers\.2\.w\.weight'\) but the config describes model\.layers\.0 to model\.layers\.1 only/,
    );
    // All layers mapped: the unrelated leftover is only reported.
    const three = { ...table(['model.layers.0.w.weight', 'model.layers.1.w.weight', 'model.layers.2.w.weight']), dtypes: undefined };
    expect(mapCheckpoint(ckpt, three).report.unmapped).toEqual(['model.extra.weight']);
  });
});
