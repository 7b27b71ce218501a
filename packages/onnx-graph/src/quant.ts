import { GraphError } from './errors.js';
import { quantizeRows } from './quant-kernel.js';

/**
 * Block-wise weight quantization for com.microsoft MatMulNBits (onnxruntime
 * contrib op): a Linear weight W [N, K] (PyTorch [out, in]) is cut into
 * blocks of `blockSize` along K; each block has a float32 scale and, when
 * asymmetric, an unsigned zero point; codes q in [0, 2^bits) dequantize as
 * (q - zero_point) * scale (zero point 2^(bits-1) when none is stored).
 *
 * Layouts (as ORT reads them):
 * - B uint8 [N, kBlocks, blockSize * bits / 8], codes in K order, two 4-bit
 *   codes per byte low nibble first;
 * - scales float32 [N * kBlocks];
 * - zero points uint8 [N * ceil(kBlocks * bits / 8)], each row padded to a
 *   byte, 4-bit ones two per byte low nibble first.
 * A last partial block (K not a multiple of blockSize) is padded with zeros.
 */
export type QuantizeMode = 'int8' | 'int4';

export interface QuantizeOptions {
  /** Bits per weight: 4 or 8. */
  bits: 4 | 8;
  /** Weights per block along K (a power of two, >= 16; default 32). */
  blockSize: number;
  /**
   * MatMulNBits accuracy_level: 0/1 float32 compute, 4 int8 compute (A quantized per block; ORT falls
   * back to float32 where the CPU has no kernel for it). Default 4: measured the fastest here and within
   * the same error (@vlmkit/models README, "Quantized weights").
   */
  accuracyLevel: 0 | 1 | 2 | 3 | 4;
  /** Symmetric (no zero points, codes centred on 2^(bits-1)) instead of min/max with zero points (default false). */
  symmetric: boolean;
  /** Quantize the LM head too (default true: measured no accuracy loss against a float head, a smaller peak RSS; models README). */
  lmHead: boolean;
}

/** What a graph is asked for: a mode name, or options over the mode's defaults. */
export type QuantizeRequest = QuantizeMode | (Partial<QuantizeOptions> & { bits: 4 | 8 });

export const QUANTIZE_MODES: readonly QuantizeMode[] = ['int8', 'int4'];

/** The full options for a request (defaults filled in, checked); errors name the option as `what`. */
export function quantizeOptions(request: QuantizeRequest, what = 'quantize'): QuantizeOptions {
  const base = typeof request === 'string' ? { bits: modeBits(request, what) } : request;
  const o: QuantizeOptions = {
    bits: base.bits,
    blockSize: base.blockSize ?? 32,
    accuracyLevel: base.accuracyLevel ?? 4,
    symmetric: base.symmetric ?? false,
    lmHead: base.lmHead ?? true,
  };
  if (o.bits !== 4 && o.bits !== 8) throw new GraphError('BAD_ARGUMENT', `${what}: bits must be 4 or 8, found ${String(o.bits)}`);
  if (!Number.isInteger(o.blockSize) || o.blockSize < 16 || (o.blockSize & (o.blockSize - 1)) !== 0) {
    throw new GraphError('BAD_ARGUMENT', `${what}: blockSize must be a power of two >= 16, found ${o.blockSize}`);
  }
  if (![0, 1, 2, 3, 4].includes(o.accuracyLevel)) {
    throw new GraphError('BAD_ARGUMENT', `${what}: accuracyLevel must be 0..4, found ${String(o.accuracyLevel)}`);
  }
  return o;
}

function modeBits(mode: string, what: string): 4 | 8 {
  if (mode === 'int8') return 8;
  if (mode === 'int4') return 4;
  throw new GraphError('BAD_ARGUMENT', `${what}: expected one of ${QUANTIZE_MODES.join(', ')}, found '${mode}'`);
}

/** The quantized form of one [N, K] weight. */
export interface QuantizedBlocks {
  /** [N * kBlocks * blobSize] codes. */
  packed: Uint8Array;
  /** [N * kBlocks]. */
  scales: Float32Array;
  /** [N * zeroPointBytesPerRow], absent when symmetric. */
  zeroPoints: Uint8Array | undefined;
}

/** Shapes of the MatMulNBits inputs for an [N, K] weight. */
export function quantizedShapes(
  n: number,
  k: number,
  o: Pick<QuantizeOptions, 'bits' | 'blockSize'>,
): { kBlocks: number; blobSize: number; b: number[]; scales: number[]; zeroPoints: number[] } {
  const kBlocks = Math.ceil(k / o.blockSize);
  const blobSize = (o.blockSize * o.bits) / 8;
  return { kBlocks, blobSize, b: [n, kBlocks, blobSize], scales: [n * kBlocks], zeroPoints: [n * Math.ceil((kBlocks * o.bits) / 8)] };
}

/**
 * Round-to-nearest block-wise quantization of W [N, K] (row-major float32).
 * Asymmetric: the block's range [min(0, lo), max(0, hi)] maps onto
 * [0, 2^bits - 1] (zero exactly representable). Symmetric: the block's
 * largest-magnitude value v maps to code 0 (scale = -v / 2^(bits-1)), so all
 * 2^bits codes are used (as llama.cpp's Q4_0 and ORT's symmetric quantizer).
 */
export function quantizeBlockwise(
  w: Float32Array,
  n: number,
  k: number,
  o: Pick<QuantizeOptions, 'bits' | 'blockSize' | 'symmetric'>,
): QuantizedBlocks {
  if (w.length !== n * k) throw new GraphError('PARAMETER_SHAPE', `quantize: ${w.length} weights for [${n}, ${k}]`);
  return quantizeRows({ dtype: 'float32', data: w }, n, k, o);
}
