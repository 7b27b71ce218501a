// The checks every model runs on its HF-named inputs before reading them: names, dtypes and shapes from
// the model's contract (its HF inputs as a schema), values by one rule per kind of input; one error code
// (BAD_INPUT), and the message names the input, what it must be and what came.
import { fields } from '@vlmkit/config';
import type { GridThw } from '@vlmkit/mrope';
import { type Contract, type ContractEntry, contract, contractProblems, type Schema, type TensorLike } from '@vlmkit/onnx-graph';
import type { HostTensor } from '@vlmkit/runtime';
import { ModelError } from './errors.js';

/** `input_ids` in a model's contract: the token ids, int64 [B, S]; every per-token input has its shape. */
export const INPUT_IDS = ['int64', ['B', 'S'], { doc: 'the token ids of the prompt' }] as const satisfies ContractEntry;
/** An optional int64 input with one value per prompt token, [B, S] like `input_ids`. */
export const PER_TOKEN = ['int64', ['B', 'S'], { optional: true }] as const satisfies ContractEntry;
/** Qwen2-VL's vision inputs (ERNIE-4.5-VL's, Qwen3-VL's): patches [N, patch_dim], one (t, h, w) row per image or video. */
export const GRID_VISION_INPUTS = {
  pixel_values: ['float32', ['patches', 'patch_dim'], { optional: true, checkedBy: 'pixelsFor' }],
  image_grid_thw: ['int64', ['images', 3], { optional: true, checkedBy: 'intRows' }],
  pixel_values_videos: ['float32', ['video_patches', 'patch_dim'], { optional: true, checkedBy: 'pixelsFor' }],
  video_grid_thw: ['int64', ['videos', 3], { optional: true, checkedBy: 'intRows' }],
} as const satisfies Schema;

const TOKEN_IDS = contract({ input_ids: INPUT_IDS });

/**
 * A model's HF-named inputs against its contract: a name it does not read (a `token_type_ids` meant for
 * another model, a misspelt `attention_mask`) would otherwise be ignored without a word; then each input's
 * dtype and shape, the per-token ones against `input_ids`.
 */
export function checkNamedInputs<S extends Schema>(c: Contract<S>, inputs: object, model: string): void {
  const problem = contractProblems(c, inputs as Readonly<Record<string, TensorLike | undefined>>)[0];
  if (problem === undefined) return;
  throw new ModelError(
    'BAD_INPUT',
    problem.code === 'UNKNOWN_INPUT'
      ? `${model} does not read an input named ${problem.input}: expected some of ${Object.keys(c.schema).join(', ')}`
      : problem.message,
  );
}

function dims(t: HostTensor): string {
  return `[${t.dims.join(', ')}]`;
}

/**
 * `input_ids`: int64 [B, S] (`INPUT_IDS`) with every id in [0, vocabSize). A negative id would be read by ONNX
 * Gather as counted from the end of the table (id -5 = id V-5): a wrong answer, so it is refused by position.
 * Checked first, so an empty prompt is named before any other input is compared with its shape.
 */
export function tokenIds(given: HostTensor | undefined, vocabSize: number): { data: BigInt64Array; batch: number; seq: number } {
  const name = TOKEN_IDS.names.input_ids;
  checkNamedInputs(TOKEN_IDS, { [name]: given }, 'the model');
  const t = given as HostTensor;
  if (t.dims[0]! < 1 || t.dims[1]! < 1) throw new ModelError('BAD_INPUT', `${name} must hold at least one token per row, got ${dims(t)}`);
  const data = t.data as BigInt64Array;
  const seq = t.dims[1]!;
  const vocab = BigInt(vocabSize);
  const bad = data.findIndex((v) => v < 0n || v >= vocab);
  if (bad >= 0) {
    throw new ModelError(
      'BAD_INPUT',
      `${name}${at(bad, seq)} is ${data[bad]}: token ids must be in [0, ${vocabSize}) (the model's vocab_size)`,
    );
  }
  return { data, batch: t.dims[0]!, seq };
}

/** Any int64 input, read as its flat data; the shape is checked against the prompt where it is used. */
export function int64Data(t: HostTensor, name: string): BigInt64Array {
  if (t.dtype !== 'int64') throw new ModelError('BAD_INPUT', `${name} must be int64, got ${t.dtype}`);
  return t.data as BigInt64Array;
}

/** A `PER_TOKEN` input's values; its dtype and shape were checked against input_ids by `checkNamedInputs`. */
export function perToken(t: HostTensor | undefined): BigInt64Array | undefined {
  return t?.data as BigInt64Array | undefined;
}

/**
 * An int64 [N, columns] table (`image_grid_thw` [N, 3] (t, h, w), `image_sizes` [N, 2] (height, width)) as rows
 * of numbers, none when absent. Every value is a size, so each must be at least 1: a zero would otherwise be
 * blamed later on whatever divides by it (the anyres pinpoints, a placeholder count).
 */
export function intRows(t: HostTensor | undefined, name: string, columns: readonly string[]): number[][] {
  if (!t) return [];
  const width = columns.length;
  const d = int64Data(t, name);
  if (t.dims.length !== 2 || t.dims[1] !== width)
    throw new ModelError('BAD_INPUT', `${name} must be int64 [N, ${width}] (${columns.join(', ')}), got ${dims(t)}`);
  const rows = Array.from({ length: t.dims[0]! }, (_, i) => Array.from(d.subarray(width * i, width * (i + 1)), Number));
  rows.forEach((r, i) => {
    if (r.some((v) => !(v >= 1)))
      throw new ModelError('BAD_INPUT', `${name}[${i}] is [${r.join(', ')}]: each of (${columns.join(', ')}) must be at least 1`);
  });
  return rows;
}

/**
 * `attention_mask`: int64 [B, S] like input_ids, values 0 (padding) or 1 (HF: "Mask values selected in [0, 1]"),
 * at least one attended token per row. Any other value would be counted as that many real tokens, and a row
 * with none has no defined logits (softmax over nothing).
 */
export function attentionMask(t: HostTensor | undefined, batch: number, seq: number, name = 'attention_mask'): BigInt64Array | undefined {
  const d = perToken(t);
  if (d === undefined) return undefined;
  const bad = d.findIndex((v) => v !== 0n && v !== 1n);
  if (bad >= 0) throw new ModelError('BAD_INPUT', `${name}${at(bad, seq)} is ${d[bad]}: mask values must be 0 (padding) or 1`);
  for (let b = 0; b < batch; b++) {
    if (!d.subarray(b * seq, (b + 1) * seq).includes(1n))
      throw new ModelError('BAD_INPUT', `${name}[${b}] is all 0: each row needs at least one attended token (1)`);
  }
  return d;
}

/** A token-type input (`mm_token_type_ids`, `moe_mm_token_type_ids`, `PER_TOKEN`): values in `allowed`. */
export function tokenTypes(t: HostTensor | undefined, name: string, seq: number, allowed: readonly number[]): BigInt64Array | undefined {
  const d = perToken(t);
  if (d === undefined) return undefined;
  const ok = new Set(allowed.map(BigInt));
  const bad = d.findIndex((v) => !ok.has(v));
  if (bad >= 0) throw new ModelError('BAD_INPUT', `${name}${at(bad, seq)} is ${d[bad]}: expected one of ${allowed.join(', ')}`);
  return d;
}

/** Flat index i of a [B, S] tensor as `[b, s]`. */
function at(i: number, seq: number): string {
  return `[${Math.floor(i / seq)}, ${i % seq}]`;
}

/** The layout pixel values must have: one of `ranks`, ending in `tail` (one patch, or one tile [C, S, S]). */
export interface PixelLayout {
  readonly ranks: readonly number[];
  readonly tail: readonly number[];
  /** As the message shows it: `[patches, 588]`. */
  readonly layout: string;
}

/**
 * Pixel values that `by` (the grids or image sizes) asks for: present, float32 (the processors' output dtype),
 * and, when `shape` is given, of that layout: a patch or tile of another size would otherwise be read as
 * if it were the model's, a wrong answer without a word.
 */
export function pixelsFor(t: HostTensor | undefined, name: string, by: string, shape?: PixelLayout): HostTensor<'float32'> {
  if (!t) throw new ModelError('BAD_INPUT', `${by} is given but ${name} is missing`);
  if (t.dtype !== 'float32') throw new ModelError('BAD_INPUT', `${name} must be float32, got ${t.dtype}`);
  if (shape !== undefined) {
    const tail = t.dims.slice(t.dims.length - shape.tail.length);
    if (!shape.ranks.includes(t.dims.length) || tail.some((d, i) => d !== shape.tail[i]))
      throw new ModelError('BAD_INPUT', `${name} must be float32 ${shape.layout}, got float32 ${dims(t)}`);
  }
  return t as HostTensor<'float32'>;
}

/** `image_grid_thw` / `video_grid_thw`: int64 [N, 3] rows (t, h, w), each at least 1. */
export function gridRows(t: HostTensor | undefined, name: string): GridThw[] {
  return intRows(t, name, ['t', 'h', 'w']).map(([t, h, w]) => [t!, h!, w!] as const);
}

/** Patches [N, patchDim] for `grids` (from `by`): float32, exactly the rows their t x h x w patches need, checked before any allocation. */
export function gridPixels(t: HostTensor | undefined, name: string, by: string, grids: GridThw[], patchDim: number): HostTensor<'float32'> {
  const pixels = pixelsFor(t, name, by, { ranks: [2], tail: [patchDim], layout: `[patches, ${patchDim}]` });
  const patches = grids.reduce((n, [gt, h, w]) => n + gt * h * w, 0);
  if (pixels.data.length !== patches * patchDim) {
    const given = grids.map((g) => `[${g.join(', ')}]`).join(', ');
    throw new ModelError(
      'BAD_INPUT',
      `${name} has ${pixels.data.length / patchDim} patch rows of ${patchDim} but ${by} (${given}) needs ${patches}`,
    );
  }
  return pixels;
}

/**
 * Pixel values and the grids or sizes that say what they hold come together: pixels without them are refused
 * rather than ignored, and grids without pixels are named before the prompt's placeholders are counted.
 */
export function pixelsNeed(t: HostTensor | undefined, name: string, by: string, byGiven: boolean): void {
  if (t !== undefined && !byGiven)
    throw new ModelError('BAD_INPUT', `${name} is given but ${by} is missing: it says how the pixels are laid out`);
  if (t === undefined && byGiven) throw new ModelError('BAD_INPUT', `${by} is given but ${name} is missing`);
}

/**
 * `text_config.max_position_embeddings` (top level in the hub's flat ERNIE layout), when the config has one.
 * Nothing in the graphs depends on it: rotary positions are computed from the position values.
 */
export function maxPositionEmbeddings(json: Record<string, unknown>): number | undefined {
  const c = fields(json, 'config.json');
  return (c.optionalObj('text_config') ?? c).optionalInt('max_position_embeddings', { min: 1 });
}

/**
 * Refuses a prompt longer than the model's max_position_embeddings before the decoder runs: such a prompt
 * makes onnxruntime allocate attention for every position at once and fail inside its arena or its shape
 * arithmetic, with a message that names neither the prompt nor the limit. `seq`: input_ids' length (padding
 * included, as generation counts it). Nothing is checked when the config has no max_position_embeddings.
 */
export function checkPromptLength(seq: number, max: number | undefined): void {
  if (max === undefined || seq <= max) return;
  throw new ModelError(
    'PROMPT_TOO_LONG',
    `the prompt is ${seq} tokens; the model's max_position_embeddings (config.json) is ${max}: shorten the prompt (fewer or smaller images, less text)`,
  );
}

/**
 * The warning HF's MaxLengthCriteria gives when generation runs past the model's trained length (a
 * "friendly reminder": HF generates on; with the default rope, the only one these decoders read, the
 * positions are computed for any length, so the numbers are HF's but the model was not trained there).
 * `context`: the longest context a token was predicted from (prompt length, padding included, plus the
 * generated tokens fed back). Undefined when within the limit or the config has none.
 */
export function pastMaxPositions(context: number, max: number | undefined): string | undefined {
  if (max === undefined || context <= max) return undefined;
  return `generation ran past max_position_embeddings (${max}): the last token was predicted from ${context} positions; expected at most ${max}. The model was not trained on such lengths; output quality may degrade (HF warns and generates on).`;
}
