import { MropeError } from './errors.js';
import { allocIds, type GridThw, type IdDtype, type IntArray, type MropePositions, setId, toRows, usesBigInt } from './inputs.js';

/** 0 text, 1 image, 2 video: HF's `mm_token_type_ids` values. */
export type TokenType = 0 | 1 | 2;

/**
 * How the running position moves past a vision item.
 * - 'vllm': the next token starts at (max position of the item) + 1, t included
 *   (vLLM `get_mrope_input_positions`; HF transformers before 5.x).
 * - 'hf': the next token starts at start + max(h', w'); t is ignored
 *   (HF 5.17 `get_rope_index`). The two differ only when t' > max(h', w').
 */
export type VideoTemporalAdvance = 'vllm' | 'hf';

/** The batch a `*RopeIndex` function reads. Grids are consumed in order across the whole batch, as in HF. */
export interface RopeIndexInput {
  /** One sequence or a batch (rows of equal length when a mask is given). */
  inputIds: IntArray | readonly IntArray[];
  /** 1 for real tokens, 0 for (left) padding. Padded columns get `paddingPosition` and are skipped when counting. */
  attentionMask?: IntArray | readonly IntArray[];
  imageGridThw?: readonly GridThw[];
  videoGridThw?: readonly GridThw[];
  /** HF `mm_token_type_ids` (0 text, 1 image, 2 video); when given, token ids are not inspected. */
  mmTokenTypeIds?: IntArray | readonly IntArray[];
}

export interface RopeIndexOptions {
  /** Default 'vllm'. */
  videoTemporalAdvance?: VideoTemporalAdvance;
  /** Default: 'int64' when inputIds are BigInt64Array, else 'int32'. */
  dtype?: IdDtype;
  /** Position written at masked (padding) columns. Default 0, as HF 5.17 `get_rope_index` leaves them. */
  paddingPosition?: number;
}

/** One vision item as the language model sees it: the merged grid and its temporal index mapping. */
export interface LlmGrid {
  t: number;
  h: number;
  w: number;
  /** Offset of temporal index `i` (0 <= i < t) from the item's start. */
  tIndex: (i: number) => number;
  /** For messages: e.g. "image 2 (grid_thw [1, 8, 12] -> 1*4*6 = 24 tokens)". */
  label: string;
}

/** What a model contributes: token typing and how one grid maps to LLM positions. */
export interface RopeIndexSpec {
  model: string;
  tokenTypes: (row: readonly number[], batchIndex: number) => TokenType[];
  /** Number of grids of a modality, and the `index`-th of them, merged. */
  count: (modality: 1 | 2) => number;
  grid: (modality: 1 | 2, index: number) => LlmGrid;
}

const NAMES = { 1: 'image', 2: 'video' } as const;

/** Shared engine behind `ernieRopeIndex` and the Qwen variants. */
export function computeRopeIndex(input: RopeIndexInput, spec: RopeIndexSpec, options: RopeIndexOptions = {}): MropePositions {
  const advance = options.videoTemporalAdvance ?? 'vllm';
  const dtype = options.dtype ?? (usesBigInt(input.inputIds) ? 'int64' : 'int32');
  const pad = options.paddingPosition ?? 0;
  const rows = toRows(input.inputIds, 'inputIds');
  const batch = rows.length;
  const seq = rows[0]?.length ?? 0;
  for (const [b, r] of rows.entries()) {
    if (r.length !== seq)
      throw new MropeError('SHAPE_MISMATCH', `inputIds: row ${b} has ${r.length} tokens, row 0 has ${seq}; pad rows to one length.`);
  }
  const masks = input.attentionMask === undefined ? undefined : toRows(input.attentionMask, 'attentionMask');
  const typeRows = input.mmTokenTypeIds === undefined ? undefined : toRows(input.mmTokenTypeIds, 'mmTokenTypeIds');
  for (const [what, m] of [
    ['attentionMask', masks],
    ['mmTokenTypeIds', typeRows],
  ] as const) {
    if (m !== undefined && (m.length !== batch || m.some((r) => r.length !== seq))) {
      throw new MropeError('SHAPE_MISMATCH', `${what} must have the shape of inputIds [${batch}, ${seq}].`);
    }
  }

  const out = allocIds(3 * batch * seq, dtype);
  if (pad !== 0) for (let i = 0; i < out.length; i++) setId(out, i, pad);
  const deltas: number[] = [];
  const used = { 1: 0, 2: 0 };

  for (let b = 0; b < batch; b++) {
    const row = rows[b]!;
    const types = (typeRows?.[b] as TokenType[] | undefined) ?? spec.tokenTypes(row, b);
    const cols: number[] = [];
    for (let s = 0; s < seq; s++) {
      if (masks === undefined || masks[b]![s] !== 0) cols.push(s);
      else if (types[s] === 1 || types[s] === 2) {
        const what = types[s] === 1 ? 'an image' : 'a video';
        // HF drops masked tokens before walking the grids: a masked placeholder would hand its grid to the
        // next run (in this row or a later one) and the mismatch would be reported there. Named here instead.
        throw new MropeError(
          'PLACEHOLDER_COUNT_MISMATCH',
          `${spec.model}: attentionMask is 0 at batch ${b}, column ${s}, on ${what} placeholder token; placeholders must be attended (mask only padding).`,
        );
      }
    }
    const put = (k: number, t: number, h: number, w: number): void => {
      const c = cols[k]!;
      setId(out, (0 * batch + b) * seq + c, t);
      setId(out, (1 * batch + b) * seq + c, h);
      setId(out, (2 * batch + b) * seq + c, w);
    };

    let cur = 0;
    let maxPos = -1;
    let k = 0;
    while (k < cols.length) {
      const type = types[cols[k]!] ?? 0;
      if (type === 0) {
        put(k, cur, cur, cur);
        maxPos = Math.max(maxPos, cur);
        cur += 1;
        k += 1;
        continue;
      }
      if (type !== 1 && type !== 2)
        throw new MropeError(
          'SHAPE_MISMATCH',
          `mmTokenTypeIds: value ${String(type)} at batch ${b}, column ${cols[k]}; expected 0, 1 or 2.`,
        );
      // A run of same-type placeholders; normally one item, several if items are adjacent (vLLM handles that).
      let end = k;
      while (end < cols.length && types[cols[end]!] === type) end++;
      const runStart = k;
      const runFirst = cols[k]!;
      const runLast = cols[end - 1]!;
      while (k < end) {
        const index = used[type];
        if (index >= spec.count(type)) {
          throw new MropeError(
            'GRID_COUNT_MISMATCH',
            `${spec.model}: ${NAMES[type]} placeholder tokens at batch ${b}, columns ${runFirst}..${runLast} need ${NAMES[type]} ${index}, ` +
              `but only ${spec.count(type)} ${NAMES[type]} grid(s) were given (grids are consumed in order across the batch).`,
          );
        }
        const g = spec.grid(type, index);
        const n = g.t * g.h * g.w;
        if (n > end - k) {
          throw new MropeError(
            'PLACEHOLDER_COUNT_MISMATCH',
            `${spec.model}: ${g.label} needs ${n} placeholder tokens, but the ${NAMES[type]} token run at batch ${b}, ` +
              `columns ${runFirst}..${runLast} (${end - runStart} tokens) has ${end - k} left for it.`,
          );
        }
        used[type] = index + 1;
        let itemMax = cur;
        for (let i = 0; i < g.t; i++) {
          const tp = cur + g.tIndex(i);
          for (let y = 0; y < g.h; y++) {
            for (let x = 0; x < g.w; x++) {
              put(k, tp, cur + y, cur + x);
              k++;
            }
          }
          itemMax = Math.max(itemMax, tp);
        }
        itemMax = Math.max(itemMax, cur + g.h - 1, cur + g.w - 1);
        maxPos = Math.max(maxPos, itemMax);
        cur = advance === 'vllm' ? itemMax + 1 : cur + Math.max(g.h, g.w);
      }
    }
    deltas.push(cols.length === 0 ? 0 : maxPos + 1 - cols.length);
  }

  for (const type of [1, 2] as const) {
    if (used[type] !== spec.count(type)) {
      throw new MropeError(
        'GRID_COUNT_MISMATCH',
        `${spec.model}: ${spec.count(type)} ${NAMES[type]} grid(s) were given but the tokens hold ${NAMES[type]} placeholders for only ${used[type]}.`,
      );
    }
  }
  return { positionIds: out, shape: [3, batch, seq], mropePositionDeltas: deltas };
}

/** Token typing from ids. When image and video share a patch id (vLLM's ERNIE), the latest start token decides. */
export function typesFromIds(
  row: readonly number[],
  ids: { image: number; video: number; imageStart?: number | undefined; videoStart?: number | undefined },
  model: string,
  batchIndex: number,
): TokenType[] {
  const shared = ids.image === ids.video;
  let last: TokenType | undefined;
  return row.map((tok, s) => {
    if (tok === ids.imageStart) last = 1;
    else if (tok === ids.videoStart) last = 2;
    if (tok !== ids.image && tok !== ids.video) return 0;
    if (!shared) return tok === ids.image ? 1 : 2;
    if (last === undefined) {
      throw new MropeError(
        'AMBIGUOUS_PATCH_TOKEN',
        `${model}: patch token ${tok} at batch ${batchIndex}, column ${s} is used for images and videos and no image/video start token precedes it; ` +
          `pass imageStartTokenId and videoStartTokenId, or mmTokenTypeIds.`,
      );
    }
    return last;
  });
}
