import { GRANITE_DECODER_INPUTS } from '@vlmkit/moe-decoder';
import { contract, declareInputs, type Feeds, type Graph, type Value, type Weights } from '@vlmkit/onnx-graph';
import { buildWindowQFormerDownsampler, windowGeometry } from '@vlmkit/qformer';
import { float32, type HostTensor, int64 } from '@vlmkit/runtime';
import { buildSiglipVisionTower } from '@vlmkit/vision-tower';
import { ModelError } from '../errors.js';
import { pixelsFor } from '../inputs-check.js';
import type { VisionBuild } from '../model-load.js';
import { visionEncoderGraph } from '../vision-graph.js';
import { type PackPlan, packPlan, type Size } from './anyres.js';
import type { Granite4VisionConfig } from './config.js';

/** The Granite vision encoder session's inputs; `channels` and `image_size` are bound from the config. */
export const GRANITE_VISION_ENCODER_INPUTS = contract({
  pixel_values: ['float32', ['tiles', 'channels', 'image_size', 'image_size'], { doc: 'the real tiles of every image, base tile first' }],
  pack_indices: ['int64', ['image_tokens'], { doc: 'the rows of the projected tiles (and image_newline) in packing order (`packPlan`)' }],
});

/** Its outputs: level k's packed features, named as the decoder input they are fed to. */
export const GRANITE_VISION_ENCODER_OUTPUTS = contract({ deepstack: GRANITE_DECODER_INPUTS.schema.deepstack });

/** What the vision encoder reads: SigLIP's parameters, and the projectors' with `image_newline`. */
export interface GraniteVisionWeights {
  readonly vision: Weights;
  readonly projectors: Weights;
}

/** The vision encoder's feeds by input name. */
export type GraniteVisionEncoderFeeds = Feeds<typeof GRANITE_VISION_ENCODER_INPUTS.schema, HostTensor>;

/**
 * The Granite vision encoder session: SigLIP (every hidden state), the
 * layerwise and spatial window Q-Former projectors, and anyres packing, one
 * graph. Inputs `pixel_values` [T, C, S, S] (the real tiles of every image,
 * base tile first), `pack_indices` [N] int64 (from `packPlan`). Outputs
 * `deepstack_{k}` [N, D] float32 per level, as packed for injection; computed in `build.computeDtype` (default
 * float32), its linear layers block-quantized with `build.quantize` (`quantizeLinearPass`).
 */
export function buildGraniteVisionEncoder(
  config: Granite4VisionConfig,
  weights: GraniteVisionWeights,
  build: Partial<VisionBuild> = {},
): Graph {
  const { vision, projectors } = weights;
  return visionEncoderGraph('granite_vision_encoder', build, (g) => {
    const v = config.vision;
    const { pixel_values: pixelValues, pack_indices: packIndices } = declareInputs(g, GRANITE_VISION_ENCODER_INPUTS, {
      sizes: { channels: v.numChannels, image_size: v.imageSize },
    });
    const { hiddenStates } = buildSiglipVisionTower(g, vision, v, { pixelValues }, { scope: 'vision_tower' });
    const D = config.projector.textHiddenSize;
    // The newline row joins the projected features, in the compute dtype (cast like every weight).
    const newline = config.imageNewline ? g.reshape(g.cast(g.param(projectors, 'image_newline', [D]), 'float32'), [1, D]) : undefined;
    for (const level of config.levels) {
      const index = level.visionLayer < 0 ? hiddenStates.length + level.visionLayer : level.visionLayer;
      let features: Value | undefined = hiddenStates[index];
      if (features === undefined) {
        throw new ModelError(
          'BAD_CONFIG',
          `level ${level.k} reads vision hidden state ${level.visionLayer}, but SigLIP gives ${hiddenStates.length}`,
        );
      }
      // "default" drops a CLS token; SigLIP has none, so Granite configs say "full".
      if (config.selectStrategy === 'default') features = g.slice(features, [1], [Number.MAX_SAFE_INTEGER], [1]);
      const name = `${level.kind === 'layerwise' ? 'layerwise_projectors' : 'spatial_projectors'}.${level.projector}`;
      const { projected } = buildWindowQFormerDownsampler(
        g,
        projectors.sub(name),
        config.projector,
        { features },
        { mode: level.kind === 'layerwise' ? 'area' : { offset: level.projector as 0 | 1 | 2 | 3 }, scope: name },
      );
      const rows = g.reshape(projected, [-1, D]);
      const table = newline ? g.concat([rows, newline], 0) : rows;
      g.output(
        g.scope(`pack.${level.k}`, () => g.cast(g.gather(table, packIndices, 0), 'float32')),
        GRANITE_VISION_ENCODER_OUTPUTS.names.deepstack(level.k),
      );
    }
  });
}

/**
 * Host-side feeds for a batch of images: the real tiles of each image out of
 * HF's zero-padded pixel_values [B, maxTiles, C, S, S] (or [T, C, S, S]), and
 * the packing plan.
 */
export function graniteVisionEncoderFeeds(
  pixelValues: HostTensor,
  imageSizes: readonly Size[],
  config: Granite4VisionConfig,
): { feeds: GraniteVisionEncoderFeeds; plan: PackPlan } {
  const side = windowGeometry(config.projector).downsampledSide;
  const plan = packPlan(imageSizes, config.pinpoints, config.vision.imageSize, side, config.imageNewline);
  const { numChannels: C, imageSize: S } = config.vision;
  const tile = C * S * S;
  const data = pixelsFor(pixelValues, 'pixel_values', 'image_sizes', {
    ranks: [5, 4],
    tail: [C, S, S],
    layout: `[images, tiles, ${C}, ${S}, ${S}] or [tiles, ${C}, ${S}, ${S}]`,
  }).data;
  const total = plan.tilesPerImage.reduce((a, b) => a + b, 0);
  const out = new Float32Array(total * tile);
  if (pixelValues.dims.length === 5) {
    const [B, maxTiles] = pixelValues.dims as [number, number];
    if (B !== imageSizes.length) throw new ModelError('BAD_INPUT', `pixel_values has ${B} images but image_sizes has ${imageSizes.length}`);
    let o = 0;
    plan.tilesPerImage.forEach((n, i) => {
      if (n > maxTiles)
        throw new ModelError('BAD_INPUT', `image ${i} (size ${imageSizes[i]!.join('x')}) needs ${n} tiles, pixel_values holds ${maxTiles}`);
      out.set(data.subarray(i * maxTiles * tile, (i * maxTiles + n) * tile), o);
      o += n * tile;
    });
  } else if (pixelValues.dims.length === 4 && pixelValues.dims[0] === total) {
    out.set(data);
  } else {
    throw new ModelError(
      'BAD_INPUT',
      `pixel_values must be [images, tiles, ${C}, ${S}, ${S}] or [${total}, ${C}, ${S}, ${S}], got [${pixelValues.dims.join(', ')}]`,
    );
  }
  return {
    feeds: GRANITE_VISION_ENCODER_INPUTS.feeds<HostTensor>({
      pixel_values: float32(out, [total, C, S, S]),
      pack_indices: int64(plan.indices, [plan.indices.length]),
    }),
    plan,
  };
}
