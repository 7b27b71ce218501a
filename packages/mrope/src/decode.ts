import { allocIds, type IdDtype, type IdTensor, setId } from './inputs.js';

/**
 * Position ids [3, B, steps] for tokens generated after a prompt: the same
 * value on all three axes, (tokens so far) + delta + step. `tokensSoFar` is
 * the number of unmasked tokens already in each row (prompt + generated);
 * `deltas` are the prompt's `mropePositionDeltas`.
 *
 * HF: Qwen2VLModel.compute_3d_position_ids (cumsum(mask) - 1 + rope_deltas);
 * vLLM: MRotaryEmbedding.get_next_input_positions (delta + context_len).
 */
export function decodePositionIds(
  deltas: readonly number[],
  tokensSoFar: number | readonly number[],
  steps = 1,
  dtype: IdDtype = 'int32',
): { positionIds: IdTensor; shape: [3, number, number] } {
  const batch = deltas.length;
  const out = allocIds(3 * batch * steps, dtype);
  for (let b = 0; b < batch; b++) {
    const base = (typeof tokensSoFar === 'number' ? tokensSoFar : (tokensSoFar[b] ?? 0)) + deltas[b]!;
    for (let a = 0; a < 3; a++) for (let j = 0; j < steps; j++) setId(out, (a * batch + b) * steps + j, base + j);
  }
  return { positionIds: out, shape: [3, batch, steps] };
}
