import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Graph, nn, saveModel } from '@vlmkit/onnx-graph';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { MappingError } from './errors.js';
import { type MappingTable, mapCheckpoint } from './mapping.js';
import { formatReport } from './report.js';
import { prefix, regex, substring } from './rules.js';
import { concat, firstOf, pack, range, row, slice, stack, stackExperts, tensor, transpose } from './source.js';
import { refBytes, tempDir } from './test-utils/temp.js';

/** 0, 1, 2, ... as float32: every element says where it came from. */
const iota = (n: number, from = 0) => Float32Array.from({ length: n }, (_, i) => from + i);

let dir: string;
let ckpt: Checkpoint;

beforeAll(async () => {
  dir = await tempDir();
  // Two shards and the index naming them, as a sharded hub checkpoint is.
  const first: Record<string, Tensor> = {
    'old.q.weight': { dtype: 'F32', shape: [2, 3], data: iota(6) },
    'old.k.weight': { dtype: 'F32', shape: [1, 3], data: iota(3, 100) },
    'old.v.weight': { dtype: 'F32', shape: [1, 3], data: iota(3, 200) },
    'router.weight': { dtype: 'F32', shape: [3, 2], data: iota(6) }, // [D, E]
    'statics.bias': { dtype: 'F32', shape: [2, 4], data: iota(8) },
    emb: { dtype: 'F32', shape: [4, 3], data: iota(12, 50) },
    'mtp.head': { dtype: 'F32', shape: [1], data: iota(1) },
    'stray.weight': { dtype: 'F32', shape: [1], data: iota(1) },
    a: { dtype: 'I64', shape: [2, 2], data: BigInt64Array.from([1n, 2n, 3n, 4n]) },
    b: { dtype: 'I64', shape: [2, 1], data: BigInt64Array.from([-5n, -6n]) },
  };
  await writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), first);
  const experts: Record<string, { dtype: 'BF16'; shape: number[]; data: Uint16Array }> = {};
  // bf16 bit patterns 0x1000*j + i: arbitrary bits that must arrive unchanged.
  for (const j of range(0, 4))
    experts[`moe.experts.${j}.w`] = { dtype: 'BF16', shape: [2, 2], data: Uint16Array.from([0, 1, 2, 3], (i) => 0x1000 * j + i) };
  await writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), experts);
  const shard = (names: object, file: string) => Object.keys(names).map((n) => [n, file]);
  const weightMap = [...shard(first, 'model-00001-of-00002.safetensors'), ...shard(experts, 'model-00002-of-00002.safetensors')];
  await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: Object.fromEntries(weightMap) }));
  ckpt = await Checkpoint.open(dir);
});

const table = (): MappingTable => ({
  name: 'toy',
  renames: [prefix('old.', 'enc.'), regex(/^moe\.experts\.(\d+)\.w$/, 'experts.$1.weight'), substring('statics.', 'moe_statics.')],
  ignore: [substring('mtp', '')],
  components: {
    enc: [
      { name: 'qkv.weight', shape: [4, 3], source: pack('enc.q.weight', 'enc.k.weight', 'enc.v.weight') },
      { name: 'q.weight', source: tensor('enc.q.weight') },
      { name: 'gate.weight', shape: [2, 3], source: transpose(tensor('router.weight')) },
      { name: 'vision_bias', shape: [4], source: row(tensor('moe_statics.bias'), 1) },
      { name: 'cols', shape: [2, 2], source: slice(tensor('moe_statics.bias'), 1, 1, 3) },
      { name: 'ab', shape: [2, 3], source: concat([tensor('a'), tensor('b')], 1) },
      { name: 'head.weight', shape: [4, 3], source: firstOf(tensor('head.weight'), tensor('emb')) },
    ],
    moe: [
      { name: 'text.w', shape: [2, 2, 2], source: stackExperts(range(0, 2), (j) => tensor(`experts.${j}.weight`)) },
      { name: 'vision.w', shape: [2, 4, 2], source: stackExperts(range(2, 4), (j) => pack(`experts.${j}.weight`, `experts.${j}.weight`)) },
    ],
  },
});

const f32 = (b: Uint8Array) => Array.from(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4));
const u16 = (b: Uint8Array) => Array.from(new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2));

describe('mapCheckpoint on a synthetic two-shard checkpoint', () => {
  it('maps names and computes shapes from headers, keeping unchanged tensors as file references', () => {
    const { components, report } = mapCheckpoint(ckpt, table());
    expect(components.enc!.names()).toEqual(['ab', 'cols', 'gate.weight', 'head.weight', 'q.weight', 'qkv.weight', 'vision_bias']);
    const q = components.enc!.get('q.weight');
    expect(q.kind).toBe('file');
    expect(q.kind === 'file' && q.path).toBe(ckpt.info('old.q.weight').file);
    expect(components.enc!.get('qkv.weight')).toMatchObject({ kind: 'lazy', dtype: 'float32', shape: [4, 3] });
    expect(components.moe!.get('vision.w')).toMatchObject({ kind: 'lazy', dtype: 'bfloat16', shape: [2, 4, 2] });
    expect(report.unmapped).toEqual(['stray.weight']);
    expect(report.ignored).toEqual(['mtp.head']);
    expect(report.missing).toEqual([]);
    expect(new Set(report.consumed)).toEqual(new Set(ckpt.names().filter((n) => n !== 'stray.weight' && n !== 'mtp.head')));
    expect(report.parameters.find((p) => p.name === 'head.weight')).toMatchObject({ sources: ['emb'], fallback: true, transformed: false });
    expect(formatReport(report)).toContain("unmapped checkpoint tensor 'stray.weight'");
  });

  it('packs, transposes, slices and concatenates raw elements (hand-derived values)', async () => {
    const enc = mapCheckpoint(ckpt, table()).components.enc!;
    // q rows 0..5, then k (100..102), then v (200..202).
    expect(f32(await refBytes(enc.get('qkv.weight')))).toEqual([0, 1, 2, 3, 4, 5, 100, 101, 102, 200, 201, 202]);
    // router [[0,1],[2,3],[4,5]] transposed.
    expect(f32(await refBytes(enc.get('gate.weight')))).toEqual([0, 2, 4, 1, 3, 5]);
    // statics [[0,1,2,3],[4,5,6,7]]: row 1, and columns 1..2 of each row.
    expect(f32(await refBytes(enc.get('vision_bias')))).toEqual([4, 5, 6, 7]);
    expect(f32(await refBytes(enc.get('cols')))).toEqual([1, 2, 5, 6]);
    const ab = await refBytes(enc.get('ab'));
    expect(Array.from(new BigInt64Array(ab.buffer, ab.byteOffset, 6))).toEqual([1n, 2n, -5n, 3n, 4n, -6n]);
    expect(f32(await refBytes(enc.get('head.weight')))).toEqual(Array.from(iota(12, 50)));
  });

  it('stacks per-expert bf16 tensors by index range, bits unchanged', async () => {
    const moe = mapCheckpoint(ckpt, table()).components.moe!;
    expect(u16(await refBytes(moe.get('text.w')))).toEqual([0, 1, 2, 3, 0x1000, 0x1001, 0x1002, 0x1003]);
    const e2 = [0x2000, 0x2001, 0x2002, 0x2003];
    const e3 = [0x3000, 0x3001, 0x3002, 0x3003];
    expect(u16(await refBytes(moe.get('vision.w')))).toEqual([...e2, ...e2, ...e3, ...e3]);
  });

  it('a missing tensor is a MISSING_TENSOR error naming the 3 nearest checkpoint names', () => {
    const t = table();
    const bad = {
      ...t,
      components: { ...t.components, enc: [...t.components.enc!, { name: 'o.weight', source: tensor('enc.q.wieght') }] },
    };
    const err = catchMapping(() => mapCheckpoint(ckpt, bad));
    expect(err.code).toBe('MISSING_TENSOR');
    expect(err.message).toContain("enc parameter 'o.weight' needs 'enc.q.wieght'");
    expect(err.message).toContain("'old.q.weight' (model-00001-of-00002.safetensors)");
    expect(err.report!.missing).toEqual([
      {
        component: 'enc',
        name: 'o.weight',
        required: true,
        tensors: ['enc.q.wieght'],
        nearest: ['old.q.weight', 'old.k.weight', 'old.v.weight'],
      },
    ]);
    // allowMissing returns the same account instead; optional parameters never throw.
    expect(mapCheckpoint(ckpt, bad, { allowMissing: true }).report.missing[0]!.nearest[0]).toBe('old.q.weight');
    const optional = { ...t, components: { enc: [{ name: 'o.weight', optional: true, source: tensor('nope') }] } };
    expect(mapCheckpoint(ckpt, optional).report.missing[0]).toMatchObject({ required: false });
  });

  it('a shape that disagrees with the expected one is SHAPE_MISMATCH naming file and tensor', () => {
    const bad = { ...table(), components: { enc: [{ name: 'q.weight', shape: [3, 2], source: tensor('enc.q.weight') }] } };
    const err = catchMapping(() => mapCheckpoint(ckpt, bad));
    expect(err.code).toBe('SHAPE_MISMATCH');
    expect(err.message).toContain(
      "enc parameter 'q.weight': expected [3, 2] (from the config), found 'old.q.weight' (model-00001-of-00002.safetensors) [2, 3] F32",
    );
    expect(err.message).toContain(join(dir, 'model-00001-of-00002.safetensors'));
  });

  it('parts that cannot be joined are SHAPE_MISMATCH / DTYPE_MISMATCH', () => {
    const rows = { ...table(), components: { enc: [{ name: 'x', source: pack('enc.q.weight', 'router.weight') }] } };
    expect(catchMapping(() => mapCheckpoint(ckpt, rows)).code).toBe('SHAPE_MISMATCH');
    const dtypes = {
      ...table(),
      components: { enc: [{ name: 'x', source: stack([tensor('experts.0.weight'), tensor('moe_statics.bias')]) }] },
    };
    const err = catchMapping(() => mapCheckpoint(ckpt, dtypes));
    expect(err.code).toBe('DTYPE_MISMATCH');
    expect(err.message).toContain("'statics.bias' (model-00001-of-00002.safetensors) [2, 4] F32");
    const slice9 = { ...table(), components: { enc: [{ name: 'x', source: row(tensor('moe_statics.bias'), 2) }] } };
    expect(catchMapping(() => mapCheckpoint(ckpt, slice9)).code).toBe('SHAPE_MISMATCH');
    const t3 = { ...table(), components: { enc: [{ name: 'x', source: transpose(stack([tensor('emb')])) }] } };
    expect(catchMapping(() => mapCheckpoint(ckpt, t3)).message).toContain('expected a 2-D tensor to transpose');
  });

  it('two checkpoint names renamed onto one are DUPLICATE_NAME; strict mode refuses unmapped tensors', () => {
    const dup = { ...table(), renames: [prefix('old.q.', 'x.'), prefix('old.k.', 'x.')] };
    expect(catchMapping(() => mapCheckpoint(ckpt, dup)).code).toBe('DUPLICATE_NAME');
    const err = catchMapping(() => mapCheckpoint(ckpt, table(), { strict: true }));
    expect(err.code).toBe('UNMAPPED_TENSOR');
    expect(err.tensor).toBe('stray.weight');
  });

  it('lazy and in-place tensors survive saveModel and run in onnxruntime', async () => {
    const enc = mapCheckpoint(ckpt, table()).components.enc!;
    const g = new Graph();
    const x = g.input('x', 'float32', [1, 3]);
    g.output(nn.linear(g, x, enc, 'qkv', { bias: false, out: 4 }), 'y');
    const path = join(dir, 'model.onnx');
    await saveModel(g, path, { externalThreshold: 0 });
    const session = await ort.InferenceSession.create(path, { executionProviders: ['cpu'], logSeverityLevel: 3 });
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([1, 10, 100]), [1, 3]) });
    await session.release();
    // y = x W^T with W rows [0,1,2], [3,4,5], [100,101,102], [200,201,202]: 0+10+200, 3+40+500, 100+1010+10200, 200+2010+20200.
    expect(Array.from(out['y']!.data as Float32Array)).toEqual([210, 543, 11310, 22410]);
  });
});

function catchMapping(f: () => unknown): MappingError {
  try {
    f();
  } catch (err) {
    if (err instanceof MappingError) return err;
    throw err;
  }
  throw new Error('expected a MappingError, nothing was thrown');
}
