// Whether a session's weights fit in the memory the system has left, checked before ORT loads them (a load
// refused here would have been killed part-way). The figures are platform-free; where the available memory
// comes from is the platform's (Node: /proc/meminfo; the browser states none).
import { type Graph, tensorByteLength } from '@vlmkit/onnx-graph';
import { ModelError } from './errors.js';

/**
 * The bytes of every tensor a session on `g` holds as weights, before the graph is written: quantized blocks
 * and scales, what a fold makes, and checkpoint tensors, 16-bit ones twice over in a float32 graph (a fold
 * casts them). A lower bound, like the rest of the memory check.
 */
export function heldBytes(g: Graph): number {
  let n = 0;
  for (const { ref } of g.snapshot().initializers) {
    // Checkpoint tensors (in a file, or read through a source) as stored: a float32 graph casts 16-bit ones.
    const stored = ref.kind === 'file' || ref.kind === 'source';
    const widened = stored && g.computeDtype === 'float32' && (ref.dtype === 'bfloat16' || ref.dtype === 'float16');
    n += (widened ? 2 : 1) * tensorByteLength(ref);
  }
  return n;
}

const GB = 2 ** 30;

/**
 * Throws INSUFFICIENT_MEMORY when a session on a graph of `needBytes` (its .onnx, its data and the checkpoint
 * tensors it reads, 16-bit ones counted as the float32 ORT casts them to) cannot fit in `availableBytes`, beside
 * `heldBytes` that the same load's earlier sessions hold. ORT maps the weights and allocates activations on top,
 * so this is a lower bound of what the session needs: a load refused here would have been killed.
 */
export function ensureMemory(name: string, needBytes: number, availableBytes: number, modelPath: string, heldBytes = 0): void {
  if (heldBytes + needBytes <= availableBytes) return;
  const beside = heldBytes > 0 ? `, beside ${gib(heldBytes)} GiB that this load's other sessions hold,` : '';
  throw new ModelError(
    'INSUFFICIENT_MEMORY',
    `session '${name}' needs at least ${gib(needBytes)} GiB for its weights (${modelPath}, its data and the checkpoint tensors it reads, as ORT holds them)${beside} but ${gib(availableBytes)} GiB of memory is available (MemAvailable); the load would run out of memory. Free memory, or load with quantize 'int8'/'int4' (about 1/4 and 1/7 of the decoder's float32 weights); profile: { memoryCheck: false } skips this check.`,
  );
}

const gib = (bytes: number) => (bytes / GB).toFixed(2);

/**
 * The memory one load's sessions are checked against together. MemAvailable is read once, at the load's first
 * check: a session's memory-mapped weights are page cache, which MemAvailable still counts as available once
 * the session exists, so a later session checked alone would not see an earlier one's weights.
 */
export class MemoryBudget {
  #available: Promise<number | undefined> | undefined;
  #held = 0;

  /** `readAvailable`: the platform's MemAvailable in bytes, undefined where it states none (no check then). */
  constructor(private readonly readAvailable: () => Promise<number | undefined>) {}

  /** Throws INSUFFICIENT_MEMORY when a session of `needBytes` does not fit beside the sessions held so far. */
  async check(name: string, needBytes: number, modelPath: string): Promise<void> {
    this.#available ??= this.readAvailable();
    const available = await this.#available;
    if (available !== undefined) ensureMemory(name, needBytes, available, modelPath, this.#held);
  }

  /** Counts a session that now exists. */
  hold(bytes: number): void {
    this.#held += bytes;
  }

  /** The bytes of the sessions counted so far. */
  get held(): number {
    return this.#held;
  }
}
