import { describeValue } from './errors.js';

/** One image's or video's patch grid before merging: [t frames, h patch rows, w patch columns] (a row of HF `image_grid_thw`). */
export type GridThw = readonly [t: number, h: number, w: number];

/** How patches merge into language-model tokens: `spatial` x `spatial` patches, `temporal` frames (1 for an image). */
export interface GridMerge {
  /** `spatial_merge_size` (ERNIE `spatial_conv_size`, the processor's `merge_size`). */
  readonly spatial: number;
  /** `temporal_merge_size` (ERNIE `temporal_conv_size`, the processor's `temporal_patch_size`); 1 unless given. */
  readonly temporal?: number;
}

/** What a bad grid throws unless the caller maps it to its own error (`Grid.of`'s `fail`). */
export class GridError extends Error {
  override readonly name = 'GridError';
  readonly code = 'INVALID_GRID';
  constructor(
    /** The input at fault, as the message names it (`image_grid_thw[1]`). */
    readonly input: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A patch grid checked against the merge that turns it into tokens: three
 * positive integers, h and w multiples of the spatial merge, t of the
 * temporal one. Every grid rule of vlmkit lives here: the patch count the
 * vision tower sees and the placeholder count the prompt holds
 * (HF Ernie4_5_VLMoeProcessor: grid.prod() // merge_length; vLLM
 * get_mrope_input_positions: llm_grid = (t / tm, h / s, w / s)).
 */
export class Grid {
  private constructor(
    readonly t: number,
    readonly h: number,
    readonly w: number,
    readonly spatialMerge: number,
    readonly temporalMerge: number,
  ) {}

  /**
   * Checks `thw` and returns the grid. `name` is the input as the message
   * names it (`video_grid_thw[0]`); `fail` turns the message into the
   * caller's own typed error (a `GridError` unless given).
   */
  static of(thw: unknown, name: string, merge: GridMerge, fail: (message: string) => Error = (m) => new GridError(name, m)): Grid {
    const s = merge.spatial;
    const tm = merge.temporal ?? 1;
    if (!Array.isArray(thw) || thw.length !== 3 || !thw.every((x) => Number.isInteger(x) && x > 0)) {
      throw fail(`${name} is ${describeValue(thw)}: expected three positive integers [t, h, w]`);
    }
    const [t, h, w] = thw as [number, number, number];
    if (h % s !== 0 || w % s !== 0 || t % tm !== 0) {
      const rule =
        tm > 1
          ? `t a multiple of temporal_merge_size (${tm}), h and w of spatial_merge_size (${s})`
          : `h and w multiples of spatial_merge_size (${s})`;
      throw fail(`${name} is [${t}, ${h}, ${w}]: expected ${rule}`);
    }
    return new Grid(t, h, w, s, tm);
  }

  /** [t, h, w] as HF writes it. */
  get thw(): GridThw {
    return [this.t, this.h, this.w];
  }

  /** Patches the vision tower sees: t * h * w (rows of pixel_values). */
  get patches(): number {
    return this.t * this.h * this.w;
  }

  /** The grid in tokens: [t / temporal, h / spatial, w / spatial] (the language model's position grid). */
  get merged(): GridThw {
    return [this.t / this.temporalMerge, this.h / this.spatialMerge, this.w / this.spatialMerge];
  }

  /** Tokens of one frame: (h / spatial) * (w / spatial). */
  get tokensPerFrame(): number {
    return (this.h / this.spatialMerge) * (this.w / this.spatialMerge);
  }

  /** The placeholder count: tokens this grid becomes, (t / temporal) * (h / spatial) * (w / spatial). */
  get tokens(): number {
    return (this.t / this.temporalMerge) * this.tokensPerFrame;
  }
}
