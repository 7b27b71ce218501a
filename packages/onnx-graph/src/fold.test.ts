import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { loadModelProto, saveModel } from './save-model.node.js';
import { tensorFromArray } from './tensor-ref.js';
import { randn } from './test-utils/ort.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Saves `build()` twice (folded and not) and returns both models' outputs on the same feeds, plus the folded proto. */
async function both(build: () => Graph, feeds: Record<string, ort.Tensor>) {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-fold-'));
  dirs.push(dir);
  const out: Record<string, Float32Array>[] = [];
  for (const fold of [false, true]) {
    const path = join(dir, `m-${fold}.onnx`);
    await saveModel(build(), path, { fold, externalThreshold: 64 });
    const s = await ort.InferenceSession.create(path, { executionProviders: ['cpu'], logSeverityLevel: 3 });
    const r = await s.run(feeds);
    out.push(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.data as Float32Array])));
    await s.release();
  }
  return { plain: out[0]!, folded: out[1]!, proto: await loadModelProto(join(dir, 'm-true.onnx')), dir };
}

/** float32 values rounded to bf16 bits (round to nearest even), as a bf16 checkpoint stores them. */
function toBf16(x: Float32Array): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  return Uint16Array.from(u, (b) => (b + 0x7fff + ((b >> 16) & 1)) >>> 16);
}

describe('saveModel fold', () => {
  it('folds bf16 Cast -> Transpose -> MatMul into one float32 [in, out] initializer; outputs identical', async () => {
    const w = toBf16(randn(48 * 40, 1));
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', ['n', 40]);
      const wt = g.initializer('fc.weight', tensorFromArray('bfloat16', [48, 40], w));
      g.output(g.matmul(x, g.transpose(g.cast(wt, 'float32'), [1, 0])), 'y');
      return g;
    };
    const x = new ort.Tensor('float32', randn(3 * 40, 2), [3, 40]);
    const { plain, folded, proto } = await both(build, { x });
    expect(folded.y).toEqual(plain.y);
    expect(proto.graph!.node!.map((n) => n.opType)).toEqual(['MatMul', 'Identity']);
    const inits = proto.graph!.initializer!;
    expect(inits.map((t) => [t.dataType, t.dims!.map(Number)])).toEqual([[1, [40, 48]]]);
  });

  it('fp16 subnormals, infinities and signed zeros convert exactly as ORT Cast does; 3-D perms compose', async () => {
    // Every 16-bit pattern but NaNs (NaN payloads need not match), laid out [4, 8, N/32].
    const bits: number[] = [];
    for (let h = 0; h < 0x10000; h++) if ((h & 0x7c00) !== 0x7c00 || (h & 0x3ff) === 0) bits.push(h);
    const n = Math.floor(bits.length / 32) * 32;
    const w = Uint16Array.from(bits.slice(0, n));
    const shape = [4, 8, n / 32];
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [n / 32, 4, 8]);
      const c = g.initializer('c', tensorFromArray('float16', shape, w));
      // perm [2, 0, 1] after the cast, then [0, 1, 2] again (identity): composes to [2, 0, 1].
      const t = g.transpose(g.transpose(g.cast(c, 'float32'), [2, 0, 1]), [0, 1, 2]);
      g.output(g.add(x, t), 'y');
      return g;
    };
    const x = new ort.Tensor('float32', new Float32Array(n), [n / 32, 4, 8]);
    const { plain, folded, proto } = await both(build, { x });
    expect(proto.graph!.node!.map((n) => n.opType)).toEqual(['Add', 'Identity']);
    expect(Buffer.from(folded.y!.buffer).equals(Buffer.from(plain.y!.buffer))).toBe(true);
    expect(plain.y!.some((v) => v === Number.POSITIVE_INFINITY)).toBe(true);
  });

  it('a cast table read by Gather and by a transposed MatMul becomes two float32 tensors; the bf16 one is dropped', async () => {
    const table = toBf16(randn(32 * 16, 3));
    const build = () => {
      const g = new Graph();
      const ids = g.input('ids', 'int64', ['n']);
      const t = g.cast(g.initializer('embed', tensorFromArray('bfloat16', [32, 16], table)), 'float32');
      const h = g.gather(t, ids);
      g.output(g.matmul(h, g.transpose(t, [1, 0])), 'y');
      return g;
    };
    const ids = new ort.Tensor('int64', BigInt64Array.from([3n, 0n, 31n]), [3]);
    const { plain, folded, proto } = await both(build, { ids });
    expect(folded.y).toEqual(plain.y);
    const inits = proto.graph!.initializer!;
    expect(inits.map((t) => [t.dataType, t.dims!.map(Number)]).sort()).toEqual([
      [1, [16, 32]],
      [1, [32, 16]],
    ]);
  });

  it('folds casts that round (float32 -> float16 / bfloat16, bf16 <-> f16) bit for bit as ORT Cast does: ties, overflow, subnormals, NaN', async () => {
    // Bit patterns around every rounding case: ties to even (odd and even kept bits), just above / below a tie,
    // the largest finite values and what overflows, f16 subnormals and underflow, signed zeros, infinities, NaN.
    const words = [
      0x3f800000, 0x3f801000, 0x3f803000, 0x3f802fff, 0x3f803001, 0x3f808000, 0x3f818000, 0x3f817fff, 0x477fe000, 0x477ff000, 0x477fefff,
      0x7f7fffff, 0x7f7f8000, 0x33800000, 0x33000000, 0x33000001, 0x387fc000, 0x38800000, 0x00000001, 0x80000000, 0x7f800000, 0xff800000,
      0x7fc00000, 0xbf801000, 0xc77ff000, 0x3eaaaaab, 0x3dcccccd,
    ];
    const src = new Float32Array(Uint32Array.from(words).buffer);
    const f16Bits = Uint16Array.from([0x3c01, 0x0001, 0x03ff, 0x7bff, 0xfbff, 0x8000, 0x7c00, 0x3555]);
    const build = () => {
      const g = new Graph();
      const f = g.initializer('f', tensorFromArray('float32', [words.length], src));
      const h = g.initializer('h', tensorFromArray('float16', [f16Bits.length], f16Bits));
      const y = g.input('y', 'float32', [1]);
      const back = (v: ReturnType<Graph['cast']>) => g.add(g.cast(v, 'float32'), y);
      g.output(back(g.cast(f, 'float16')), 'to_f16');
      g.output(back(g.cast(f, 'bfloat16')), 'to_bf16');
      g.output(back(g.cast(g.cast(f, 'bfloat16'), 'float16')), 'bf16_to_f16');
      g.output(back(g.cast(h, 'bfloat16')), 'f16_to_bf16');
      return g;
    };
    const { plain, folded, proto } = await both(build, { y: new ort.Tensor('float32', new Float32Array(1), [1]) });
    expect(proto.graph!.node!.filter((n) => n.opType === 'Cast')).toHaveLength(0);
    const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
    for (const k of ['to_f16', 'to_bf16', 'bf16_to_f16', 'f16_to_bf16']) expect(bits(folded[k]!), k).toEqual(bits(plain[k]!));
  });

  it('folds a cast that rounds; leaves outputs alone; tensors of 1 MiB or more start on a 4 KiB page', async () => {
    const big = randn(1 << 18, 4); // exactly 1 MiB of float32
    const small = randn(100, 5);
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [1 << 18]);
      const s = g.initializer('small', tensorFromArray('float32', [100], small));
      const b = g.initializer('big', tensorFromArray('float32', [1 << 18], big));
      const r = g.initializer(
        'r',
        tensorFromArray(
          'float32',
          [100],
          small.map((v) => v * 3),
        ),
      );
      g.output(g.cast(g.cast(r, 'float16'), 'float32'), 'rounded');
      g.output(g.add(s, s), 'twice');
      g.output(g.add(x, b), 'y');
      return g;
    };
    const x = new ort.Tensor('float32', new Float32Array(1 << 18), [1 << 18]);
    const { plain, folded, proto } = await both(build, { x });
    expect(folded.rounded).toEqual(plain.rounded);
    expect(proto.graph!.node!.filter((n) => n.opType === 'Cast')).toHaveLength(0);
    const offset = (name: string) =>
      Number(proto.graph!.initializer!.find((t) => t.name === name)!.externalData!.find((e) => e.key === 'offset')!.value);
    expect(proto.graph!.initializer!.map((t) => t.name)).not.toContain('r'); // folded through its two casts
    expect(offset('small')).toBe(0);
    expect(offset('big') % 4096).toBe(0);
    expect(offset('big')).toBeGreaterThan(0);
  });
});
