import { type ConfigObject, fields } from '@vlmkit/config';
import { MAX_PROCESSED_PIXELS, ProcessorError, refuseNullSettings, type SettingsSource } from '../errors.js';
import type { RgbImage } from './decode.js';
import { crop, PIXEL_SETTING_KEYS, type PixelNormalization, readNormalization, readResample, writeNormalizedChw } from './pixels.js';
import { type ResampleFilter, resize, type Uint8Image } from './resize.js';

/** [height, width]. */
export type Size = readonly [number, number];

/** HF SizeDict as LlavaNext uses it: an exact size, or the shortest edge (aspect kept). */
export type SizeSpec = { readonly height: number; readonly width: number } | { readonly shortestEdge: number };

/** What LlavaNextImageProcessor (Granite 4 Vision's image processor) reads from preprocessor_config.json. */
export interface AnyresImageProcessorConfig {
  /** The resolutions an image may be tiled into, [height, width] each (`image_grid_pinpoints`). */
  readonly imageGridPinpoints: readonly Size[];
  /** `size`: the base image's size and what every tile is resized to. */
  readonly size: SizeSpec;
  /** `crop_size`, applied when `doCenterCrop`; its height is also the tile side (HF's patch_size). */
  readonly cropSize: Size;
  readonly doResize: boolean;
  readonly doCenterCrop: boolean;
  /** Pad every image to the same tile count with zeros (`do_pad`), as a batch needs. */
  readonly doPad: boolean;
  readonly resample: ResampleFilter;
  readonly normalization: PixelNormalization;
}

const FROM = 'HF LlavaNextImageProcessor';

/** A LlavaNext size dict: exactly {height, width} or {shortest_edge} (HF's other valid key sets are not used by it). */
function readSize(c: ConfigObject, key: string): SizeSpec | undefined {
  const s = c.optionalObj(key);
  if (s === undefined) return undefined;
  const keys = Object.keys(s.json).sort().join(',');
  const side = { max: 4096 };
  if (keys === 'height,width') return { height: s.int('height', side), width: s.int('width', side) };
  if (keys === 'shortest_edge' && key === 'size') return { shortestEdge: s.int('shortest_edge', side) };
  return c.fail(
    'INVALID_CONFIG',
    key,
    `must be {"height", "width"}${key === 'size' ? ' or {"shortest_edge"}' : ''}, found keys ${JSON.stringify(Object.keys(s.json))}.`,
  );
}

/**
 * Reads LlavaNext / Granite 4 Vision image processor settings: preprocessor_config.json, or the
 * `image_processor` object HF's save_pretrained nests in processor_config.json (`source` names
 * which, for errors). Throws ConfigError naming the field. Beyond HF's own checks, a pinpoint of
 * more than MAX_PROCESSED_PIXELS, or tiles that would add up to more, is refused before any
 * image is touched.
 */
export function anyresImageProcessorConfig(
  json: unknown,
  source: SettingsSource = { file: 'preprocessor_config.json' },
): AnyresImageProcessorConfig {
  const c = fields(json, `LlavaNext ${source.file}`, source.key);
  refuseNullSettings(c, ['image_grid_pinpoints', 'size', 'crop_size', 'do_resize', 'do_center_crop', 'do_pad', ...PIXEL_SETTING_KEYS]);
  const crop = readSize(c, 'crop_size') ?? { height: 224, width: 224 };
  if (!('height' in crop)) return c.fail('INVALID_CONFIG', 'crop_size', 'must have height and width.');
  const imageGridPinpoints = c.intPairs('image_grid_pinpoints', {
    default: [
      [336, 672],
      [672, 336],
      [672, 672],
      [1008, 336],
      [336, 1008],
    ],
    from: FROM,
    min: 1,
  });
  if (imageGridPinpoints.length === 0) c.fail('INVALID_CONFIG', 'image_grid_pinpoints', 'is empty; it needs at least one [height, width].');
  // The base image plus the tiles of the largest pinpoint, each crop_size after processing.
  const tile = crop.height;
  let tiles = 0;
  for (const [h, w] of imageGridPinpoints) {
    if (h * w > MAX_PROCESSED_PIXELS) {
      c.fail(
        'INVALID_CONFIG',
        'image_grid_pinpoints',
        `has [${h}, ${w}]: over ${MAX_PROCESSED_PIXELS} pixels (4096 x 4096), the most vlmkit processes.`,
      );
    }
    tiles = Math.max(tiles, 1 + Math.ceil(h / tile) * Math.ceil(w / tile));
  }
  if (tiles * crop.height * crop.width > MAX_PROCESSED_PIXELS) {
    c.fail(
      'INVALID_CONFIG',
      'image_grid_pinpoints',
      `with crop_size ${crop.height}x${crop.width} cuts an image into up to ${tiles} tiles, ` +
        `over ${MAX_PROCESSED_PIXELS} pixels (4096 x 4096), the most vlmkit processes per image.`,
    );
  }
  return {
    imageGridPinpoints,
    size: readSize(c, 'size') ?? { shortestEdge: 224 },
    cropSize: [crop.height, crop.width],
    doResize: c.bool('do_resize', { default: true, from: FROM }),
    doCenterCrop: c.bool('do_center_crop', { default: true, from: FROM }),
    doPad: c.bool('do_pad', { default: true, from: FROM }),
    resample: readResample(c, 'bicubic'),
    normalization: readNormalization(c, FROM),
  };
}

/**
 * The pinpoint resolution an image is tiled into: the one that keeps the
 * most of the image's pixels, then wastes the least (HF
 * image_processing_utils.select_best_resolution; LLaVA-NeXT's rule).
 */
export function selectBestResolution(original: Size, pinpoints: readonly Size[]): Size {
  const [oh, ow] = original;
  let best: Size | undefined;
  let maxEffective = 0;
  let minWasted = Number.POSITIVE_INFINITY;
  for (const [h, w] of pinpoints) {
    const scale = Math.min(w / ow, h / oh);
    const effective = Math.min(Math.trunc(ow * scale) * Math.trunc(oh * scale), ow * oh);
    const wasted = w * h - effective;
    if (effective > maxEffective || (effective === maxEffective && wasted < minWasted)) {
      maxEffective = effective;
      minWasted = wasted;
      best = [h, w];
    }
  }
  if (best === undefined) throw new ProcessorError('INVALID_PROCESSOR_CONFIG', 'image_grid_pinpoints is empty.');
  return best;
}

/** HF get_patch_output_size: the image's size scaled to fit in `target`, aspect kept (ceil, capped). */
export function patchOutputSize(original: Size, target: Size): Size {
  const [oh, ow] = original;
  const [th, tw] = target;
  const scaleW = tw / ow;
  const scaleH = th / oh;
  if (scaleW < scaleH) return [Math.min(Math.ceil(oh * scaleW), th), tw];
  return [th, Math.min(Math.ceil(ow * scaleH), tw)];
}

/** PilBackend.resize for a SizeDict: exact height/width, or get_resize_output_image_size for a shortest edge. */
function resizeTo(im: Uint8Image, size: SizeSpec, filter: ResampleFilter): Uint8Image {
  if ('height' in size) return resize(im, size.width, size.height, filter);
  const s = size.shortestEdge;
  const [short, long] = im.width <= im.height ? [im.width, im.height] : [im.height, im.width];
  const newLong = Math.trunc((s * long) / short);
  return im.width <= im.height ? resize(im, s, newLong, filter) : resize(im, newLong, s, filter);
}

/**
 * LlavaNextImageProcessorPil.get_image_patches: the base image (resized to
 * `size`, aspect not kept) followed by the tiles of the best-fit resolution:
 * the image resized into it keeping its aspect, centred on a zero (black)
 * canvas, cut row by row into tile-side squares.
 */
export function anyresTiles(im: Uint8Image, config: AnyresImageProcessorConfig): Uint8Image[] {
  // LlavaNext's tile side (`patch_size` in _preprocess): crop_size.height, which HF always has.
  const tile = config.cropSize[0];
  const best = selectBestResolution([im.height, im.width], config.imageGridPinpoints);
  const [nh, nw] = patchOutputSize([im.height, im.width], best);
  const resized = resize(im, nw, nh, config.resample);
  // _get_padding_size: the smaller half of the margin goes before the image.
  const padded = crop(resized, -Math.floor((best[0] - nh) / 2), -Math.floor((best[1] - nw) / 2), best[0], best[1]);
  const tiles: Uint8Image[] = [];
  for (let i = 0; i < best[0]; i += tile) {
    for (let j = 0; j < best[1]; j += tile) {
      tiles.push(crop(padded, i, j, Math.min(tile, best[0] - i), Math.min(tile, best[1] - j)));
    }
  }
  const base = 'height' in config.size ? config.size : { height: config.size.shortestEdge, width: config.size.shortestEdge };
  return [resize(im, base.width, base.height, config.resample), ...tiles];
}

/** The model inputs for a list of images, named and laid out as HF's processor returns them. */
export interface AnyresImageInputs {
  /** [images, max tiles, 3, tile height, tile width] float32; images with fewer tiles are zero-padded. */
  readonly pixelValues: Float32Array;
  readonly pixelValuesShape: readonly [number, number, number, number, number];
  /** Per image its original [height, width] (after EXIF orientation). */
  readonly imageSizes: readonly Size[];
  /** Per image the tiles that are real (base + grid), before padding. */
  readonly tilesPerImage: readonly number[];
}

/**
 * LlavaNextImageProcessorPil._preprocess: per image, anyres tiles, then per
 * tile resize to `size`, center crop, rescale and normalize; the images'
 * tile stacks zero-padded to the longest (do_pad) and stacked.
 */
export function processAnyresImages(images: readonly RgbImage[], config: AnyresImageProcessorConfig): AnyresImageInputs {
  const perImage = images.map((image) =>
    anyresTiles({ ...image, channels: 3 }, config).map((t) => {
      let tile = config.doResize ? resizeTo(t, config.size, config.resample) : t;
      if (config.doCenterCrop) {
        const [ch, cw] = config.cropSize;
        tile = crop(tile, Math.floor((tile.height - ch) / 2), Math.floor((tile.width - cw) / 2), ch, cw);
      }
      return tile;
    }),
  );
  const first = perImage[0]?.[0];
  const [th, tw] = first ? [first.height, first.width] : [0, 0];
  for (const t of perImage.flat()) {
    if (t.height !== th || t.width !== tw) {
      throw new ProcessorError(
        'INVALID_SIZE',
        `LlavaNext image processor: tiles of ${t.width}x${t.height} and ${tw}x${th} cannot be stacked; ` +
          'image_grid_pinpoints must be multiples of the tile side.',
      );
    }
  }
  const counts = perImage.map((tiles) => tiles.length);
  if (!config.doPad && new Set(counts).size > 1) {
    throw new ProcessorError('INVALID_INPUT', 'LlavaNext image processor: images with different tile counts need do_pad.');
  }
  const maxTiles = Math.max(0, ...counts);
  const tileLen = 3 * th * tw;
  const pixelValues = new Float32Array(images.length * maxTiles * tileLen);
  perImage.forEach((tiles, i) => {
    tiles.forEach((t, j) => {
      writeNormalizedChw(t, config.normalization, pixelValues, (i * maxTiles + j) * tileLen);
    });
  });
  return {
    pixelValues,
    pixelValuesShape: [images.length, maxTiles, 3, th, tw],
    imageSizes: images.map((im) => [im.height, im.width] as const),
    tilesPerImage: counts,
  };
}
