import { selectBestResolution } from '@vlmkit/processors';

/** [height, width]. */
export type Size = readonly [number, number];

// The best-fit rule is the image processor's (LLaVA-NeXT select_best_resolution); one copy, in @vlmkit/processors.
export { selectBestResolution };

export interface AnyresLayout {
  /** Tiles of the best-fit resolution: rows and columns. */
  rows: number;
  cols: number;
  /** Tiles fed to the vision tower: the base (whole image) tile plus rows * cols. */
  numTiles: number;
}

/** The tiling HF's processor makes for an image (get_anyres_image_grid_shape / image_size_to_num_patches). */
export function anyresLayout(imageSize: Size, pinpoints: readonly Size[], tileSize: number): AnyresLayout {
  const [h, w] = selectBestResolution(imageSize, pinpoints);
  const rows = Math.floor(h / tileSize);
  const cols = Math.floor(w / tileSize);
  return { rows, cols, numTiles: rows * cols + 1 };
}

/**
 * The rows or columns of the packed feature grid that survive unpadding to
 * the original aspect ratio (HF/vLLM unpad_image: round(x, 7), then an equal
 * margin cut from both sides).
 */
export function unpaddedRange(imageSize: Size, gridH: number, gridW: number): { rows: [number, number]; cols: [number, number] } {
  const [oh, ow] = imageSize;
  const round7 = (x: number) => Math.trunc(Math.round(x * 1e7) / 1e7);
  if (ow / oh > gridW / gridH) {
    const newH = round7(oh * (gridW / ow));
    const pad = Math.floor((gridH - newH) / 2);
    return { rows: [pad, gridH - pad], cols: [0, gridW] };
  }
  const newW = round7(ow * (gridH / oh));
  const pad = Math.floor((gridW - newW) / 2);
  return { rows: [0, gridH], cols: [pad, gridW - pad] };
}

export interface PackPlan {
  /** Per image, the number of vision-tower tiles (base first). */
  tilesPerImage: number[];
  /** Per image, the number of image tokens after packing (placeholders it needs). */
  tokensPerImage: number[];
  /**
   * Gather indices into [all tiles' projected tokens (T * side^2 rows), image_newline (1 row)]:
   * per image, the base tile's tokens, then the unpadded tile grid row by row, each row ended by image_newline.
   */
  indices: number[];
}

/**
 * How projected tile features become the image tokens the LM sees, exactly
 * as HF's pack_image_features (Granite4VisionModel) and vLLM's
 * _pack_and_unpad_image_features: base tile first, then the tiles laid out as
 * one (rows*side) x (cols*side) grid, unpadded, with image_newline after each
 * row. `side` is the projected tokens per tile side.
 */
export function packPlan(
  imageSizes: readonly Size[],
  pinpoints: readonly Size[],
  tileSize: number,
  side: number,
  withNewline = true,
): PackPlan {
  const perTile = side * side;
  const layouts = imageSizes.map((s) => anyresLayout(s, pinpoints, tileSize));
  const totalTiles = layouts.reduce((a, l) => a + l.numTiles, 0);
  const newline = totalTiles * perTile;
  const indices: number[] = [];
  const tokensPerImage: number[] = [];
  let tile0 = 0;
  imageSizes.forEach((size, i) => {
    const { rows, cols, numTiles } = layouts[i]!;
    const start = indices.length;
    for (let j = 0; j < perTile; j++) indices.push(tile0 * perTile + j);
    if (numTiles === 1) {
      if (withNewline) indices.push(newline);
    } else {
      const gridH = rows * side;
      const gridW = cols * side;
      const keep = unpaddedRange(size, gridH, gridW);
      for (let r = keep.rows[0]; r < keep.rows[1]; r++) {
        for (let c = keep.cols[0]; c < keep.cols[1]; c++) {
          const tile = Math.floor(r / side) * cols + Math.floor(c / side);
          indices.push((tile0 + 1 + tile) * perTile + (r % side) * side + (c % side));
        }
        if (withNewline) indices.push(newline);
      }
    }
    tokensPerImage.push(indices.length - start);
    tile0 += numTiles;
  });
  return { tilesPerImage: layouts.map((l) => l.numTiles), tokensPerImage, indices };
}
