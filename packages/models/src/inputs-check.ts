// The checks every model runs on its HF-named inputs before reading them: one rule per kind of
// input, one error code (BAD_INPUT), and the message names the input, what it must be and what came.
import type { HostTensor } from '@vlmkit/runtime';
import { ModelError } from './errors.js';

function dims(t: HostTensor): string {
  return `[${t.dims.join(', ')}]`;
}

/**
 * `input_ids`: int64 [B, S] with every id in [0, vocabSize). A negative id would be read by ONNX Gather as
 * counted from the end of the table (id -5 = id V-5): a wrong answer, so it is refused by position.
 */
export function tokenIds(
  t: HostTensor | undefined,
  vocabSize: number,
  name = 'input_ids',
): { data: BigInt64Array; batch: number; seq: number } {
  if (t === undefined) throw new ModelError('BAD_INPUT', `${name} is missing: the token ids of the prompt, int64 [B, S]`);
  if (t.dtype !== 'int64' || t.dims.length !== 2)
    throw new ModelError('BAD_INPUT', `${name} must be int64 [B, S], got ${t.dtype} ${dims(t)}`);
  if (t.dims[0]! < 1 || t.dims[1]! < 1) throw new ModelError('BAD_INPUT', `${name} must hold at least one token per row, got ${dims(t)}`);
  const data = t.data as BigInt64Array;
  const seq = t.dims[1]!;
  const vocab = BigInt(vocabSize);
  const bad = data.findIndex((v) => v < 0n || v >= vocab);
  if (bad >= 0) {
    const at = seq > 0 ? `[${Math.floor(bad / seq)}, ${bad % seq}]` : `${bad}`;
    throw new ModelError('BAD_INPUT', `${name}${at} is ${data[bad]}: token ids must be in [0, ${vocabSize}) (the model's vocab_size)`);
  }
  return { data, batch: t.dims[0]!, seq };
}

/** Any int64 input, read as its flat data; the shape is checked against the prompt where it is used. */
export function int64Data(t: HostTensor, name: string): BigInt64Array {
  if (t.dtype !== 'int64') throw new ModelError('BAD_INPUT', `${name} must be int64, got ${t.dtype}`);
  return t.data as BigInt64Array;
}

/** An optional int64 input with one value per prompt token, [B, S] like input_ids. */
export function perToken(t: HostTensor | undefined, name: string, batch: number, seq: number): BigInt64Array | undefined {
  if (t === undefined) return undefined;
  const d = int64Data(t, name);
  if (d.length !== batch * seq)
    throw new ModelError('BAD_INPUT', `${name} must have the shape of input_ids [${batch}, ${seq}], got ${dims(t)}`);
  return d;
}

/** An int64 [N, width] table (`image_grid_thw` [N, 3], `image_sizes` [N, 2]) as rows of numbers; none when absent. */
export function intRows(t: HostTensor | undefined, name: string, width: number): number[][] {
  if (!t) return [];
  const d = int64Data(t, name);
  if (t.dims.length !== 2 || t.dims[1] !== width) throw new ModelError('BAD_INPUT', `${name} must be [N, ${width}], got ${dims(t)}`);
  return Array.from({ length: t.dims[0]! }, (_, i) => Array.from(d.subarray(width * i, width * (i + 1)), Number));
}

/** Pixel values that `by` (the grids or image sizes) asks for: present, float32 (the processors' output dtype). */
export function pixelsFor(t: HostTensor | undefined, name: string, by: string): HostTensor<'float32'> {
  if (!t) throw new ModelError('BAD_INPUT', `${by} is given but ${name} is missing`);
  if (t.dtype !== 'float32') throw new ModelError('BAD_INPUT', `${name} must be float32, got ${t.dtype}`);
  return t as HostTensor<'float32'>;
}
