/**
 * Executing a plan: raw elements moved, never converted (bf16 stays bf16
 * bits). Concatenation along dim 0 and stacking write each part straight
 * into its place in the output, so a stacked [E, 2I, D] expert tensor costs
 * one output buffer plus one expert at a time.
 */

import type { TypedArray } from '@vlmkit/onnx-graph';
import { DTYPE_SIZE, type Tensor, viewAs } from '@vlmkit/safetensors';
import type { Plan } from './plan.js';

export type Read = (checkpointName: string) => Promise<Tensor>;

const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The plan's result as little-endian bytes of its dtype. */
export async function loadBytes(plan: Plan, read: Read): Promise<Uint8Array> {
  const out = new Uint8Array(count(plan.shape) * DTYPE_SIZE[plan.dtype]);
  await fill(plan, out, read);
  return out;
}

/** The plan's result as the typed array of its dtype (16-bit floats as Uint16 bits). */
export async function loadTyped(plan: Plan, read: Read): Promise<TypedArray> {
  // Little-endian bytes as host order: this package assumes a little-endian host, as onnxruntime does.
  return viewAs(plan.dtype, await loadBytes(plan, read));
}

async function fill(plan: Plan, out: Uint8Array, read: Read): Promise<void> {
  const es = DTYPE_SIZE[plan.dtype];
  switch (plan.kind) {
    case 'tensor': {
      const t = await read(plan.info.name);
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return;
    }
    case 'stack':
    case 'concat': {
      if (plan.kind === 'stack' || plan.dim === 0) {
        let at = 0;
        for (const p of plan.parts) {
          const n = count(p.shape) * es;
          await fill(p, out.subarray(at, at + n), read);
          at += n;
        }
        return;
      }
      // Along an inner dim: interleave blocks of each part per outer index.
      const outer = count(plan.shape.slice(0, plan.dim));
      const rowBytes = count(plan.shape.slice(plan.dim)) * es;
      let offset = 0;
      for (const p of plan.parts) {
        const src = await loadBytes(p, read);
        const block = count(p.shape.slice(plan.dim)) * es;
        for (let o = 0; o < outer; o++) out.set(src.subarray(o * block, (o + 1) * block), o * rowBytes + offset);
        offset += block;
      }
      return;
    }
    case 'transpose': {
      const [rows, cols] = plan.of.shape as [number, number];
      const src = await loadBytes(plan.of, read);
      transpose2d(src, out, rows, cols, es);
      return;
    }
    case 'slice': {
      const src = await loadBytes(plan.of, read);
      const outer = count(plan.of.shape.slice(0, plan.dim));
      const inner = count(plan.of.shape.slice(plan.dim + 1)) * es;
      const size = plan.of.shape[plan.dim]!;
      const n = (plan.end - plan.start) * inner;
      for (let o = 0; o < outer; o++) {
        const from = (o * size + plan.start) * inner;
        out.set(src.subarray(from, from + n), o * n);
      }
      return;
    }
  }
}

/** [rows, cols] -> [cols, rows], moving whole elements of `es` bytes. */
function transpose2d(src: Uint8Array, out: Uint8Array, rows: number, cols: number, es: number): void {
  // Both buffers are fresh allocations, so element-sized views are aligned. Integer views: bits move unchanged (no NaN canonicalisation).
  if (es === 8) {
    const s = new BigUint64Array(src.buffer, src.byteOffset, rows * cols);
    const d = new BigUint64Array(out.buffer, out.byteOffset, rows * cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c]!;
    return;
  }
  const view = (b: Uint8Array) =>
    es === 4 ? new Uint32Array(b.buffer, b.byteOffset, rows * cols) : es === 2 ? new Uint16Array(b.buffer, b.byteOffset, rows * cols) : b;
  const s = view(src);
  const d = view(out);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c]!;
}
