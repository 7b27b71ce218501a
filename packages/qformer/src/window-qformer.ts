import { applyComputeDtype, type ComputeDType, contract, declareInputs, Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { interpolateDownsample, spatialOffsetDownsample } from './downsample.js';
import { QFormerError } from './errors.js';
import { buildBlip2QFormer } from './qformer.js';
import { unwindowedRaster, windowedRaster } from './raster.js';
import { validateWindowQFormerConfig, type WindowQFormerConfig, windowGeometry } from './window-config.js';

/**
 * How the query windows are seeded: 'area' (the deepstack / layerwise
 * projectors: area interpolation, a 2x2 mean for rate 1/2) or one corner of
 * every 2x2 block (the spatial projectors: 0 TL, 1 TR, 2 BL, 3 BR).
 */
export type DownsampleMode = 'area' | { readonly offset: 0 | 1 | 2 | 3 };

/** Values the downsampler reads from the caller's graph. */
export interface WindowQFormerInputs {
  /** [N, s*s, Dv]: one SigLIP hidden state (before post_layernorm) for N tiles, patches in raster order. */
  readonly features: Value;
}

export interface WindowQFormerOutputs {
  /** [N, (s*q/w)^2, D]: per tile, the downsampled grid in raster order, in the LM's width. */
  readonly projected: Value;
}

export interface WindowQFormerOptions {
  readonly mode: DownsampleMode;
  /**
   * Scope of the nodes and initializers (default `window_qformer`). Give each
   * projector in one graph its own, e.g. the checkpoint's module name
   * `layerwise_projectors.0` or `spatial_projectors.3`.
   */
  readonly scope?: string;
  /**
   * Standalone models only: the float type the graph computes in (default 'float32': built in it, then
   * converted by onnx-graph's `floatConvertPass`); input and output stay float32.
   */
  readonly computeDtype?: ComputeDType | undefined;
}

/**
 * Adds Granite 4 Vision's WindowQFormerDownsampler to `g` (vLLM: granite4_vision.WindowQFormerDownsampler.forward;
 * HF 5.17: Granite4VisionWindowQFormerDownsampler.forward). Every window of every tile is one Q-Former batch
 * row: its q x q queries come from the downsampled features, its keys from the w x w features around them.
 * `weights` holds `expectedParameters(config)`; bf16/fp16 weights are cast to the input dtype.
 */
export function buildWindowQFormerDownsampler(
  g: Graph,
  weights: Weights,
  config: WindowQFormerConfig,
  inputs: WindowQFormerInputs,
  options: WindowQFormerOptions,
): WindowQFormerOutputs {
  const cfg = validateWindowQFormerConfig(config);
  const mode = checkMode(options?.mode, cfg);
  const features = checkFeatures(inputs.features, cfg);
  const { imageSide: s, querySide: q, windowSide: w, visionHiddenSize: dv } = cfg;
  const { numWindows: n, downsampledSide } = windowGeometry(cfg);
  return g.scope(options.scope ?? 'window_qformer', () => {
    const x = nn.layerNorm(g, g.cast(features, 'float32'), weights, 'norm', cfg.normEps);
    const keyWindows = windowedRaster(g, x, { side: s, win: w, channels: dv }); // [N*n*n, w*w, Dv]
    // HF: interpolated_side = int(image_side * Fraction(rate)), which is n*q since w divides s.
    const downsampled =
      mode === 'area'
        ? interpolateDownsample(g, x, { side: s, newSide: downsampledSide, channels: dv })
        : spatialOffsetDownsample(g, x, { side: s, offset: mode.offset, channels: dv });
    const queryWindows = windowedRaster(g, downsampled, { side: downsampledSide, win: q, channels: dv }); // [N*n*n, q*q, Dv]
    const queryEmbeds = g.add(param(g, weights, 'query', [1, q * q, dv], x), queryWindows);
    const encoderEmbeds = g.add(keyWindows, param(g, weights, 'image_positions', [1, w * w, dv], x));
    const { hidden } = buildBlip2QFormer(
      g,
      weights.sub('qformer'),
      cfg.qformer,
      { queryEmbeds, encoderHiddenStates: encoderEmbeds },
      { scope: 'qformer' },
    );
    const out = unwindowedRaster(g, hidden, { windowsPerSide: n, win: q, channels: dv, batch: features.dim(0) }); // [N, (n*q)^2, Dv]
    return { projected: nn.linear(g, out, weights, 'out_linear', { in: dv, out: cfg.textHiddenSize }) };
  });
}

/** The standalone model's input: one tile's s*s vision features; `window_tokens` and `vision_hidden` are bound from the config. */
export const WINDOW_QFORMER_INPUTS = contract({ features: ['float32', ['num_tiles', 'window_tokens', 'vision_hidden']] });

/** Names of the standalone model's input (`WINDOW_QFORMER_INPUTS`) and output. */
export const WINDOW_QFORMER_IO = { features: WINDOW_QFORMER_INPUTS.names.features, projected: 'projected' } as const;

/**
 * One downsampler alone as a complete graph: input `features` float32
 * [num_tiles, s*s, Dv], output `projected` float32 [num_tiles, (s*q/w)^2, D]
 * (computed in `options.computeDtype`).
 */
export function buildWindowQFormerDownsamplerModel(weights: Weights, config: WindowQFormerConfig, options: WindowQFormerOptions): Graph {
  const cfg = validateWindowQFormerConfig(config);
  const g = new Graph({ name: 'window_qformer_downsampler' });
  const { features } = declareInputs(g, WINDOW_QFORMER_INPUTS, {
    sizes: { window_tokens: cfg.imageSide ** 2, vision_hidden: cfg.visionHiddenSize },
  });
  const { projected } = buildWindowQFormerDownsampler(g, weights, cfg, { features }, options);
  g.output(projected, WINDOW_QFORMER_IO.projected, ['num_tiles', windowGeometry(cfg).tokensPerTile, cfg.textHiddenSize]);
  applyComputeDtype(g, options.computeDtype);
  return g;
}

function param(g: Graph, w: Weights, name: string, shape: number[], like: Value): Value {
  const p = g.param(w, name, shape);
  return p.dtype === like.dtype ? p : g.cast(p, like.dtype);
}

function checkMode(mode: DownsampleMode | undefined, cfg: WindowQFormerConfig): DownsampleMode {
  if (mode === 'area') return mode;
  if (mode === undefined || typeof mode !== 'object' || ![0, 1, 2, 3].includes(mode.offset)) {
    throw new QFormerError('BAD_INPUT', `window Q-Former: mode must be 'area' or { offset: 0 | 1 | 2 | 3 }, got ${JSON.stringify(mode)}`);
  }
  // The offset sampler halves the side while the windows expect s*q/w: both references fail unless q/w = 1/2.
  if (2 * cfg.querySide !== cfg.windowSide) {
    throw new QFormerError(
      'UNSUPPORTED_CONFIG',
      `window Q-Former: a spatial offset projector needs downsample_rate 1/2 (it takes one corner of each 2x2 block), got ${cfg.querySide}/${cfg.windowSide}; HF and vLLM fail on this too. Use mode 'area', or a rate such as "4/8".`,
    );
  }
  return mode;
}

function checkFeatures(x: Value | undefined, cfg: WindowQFormerConfig): Value {
  const [p, dv] = [cfg.imageSide ** 2, cfg.visionHiddenSize];
  if (x === undefined) throw new QFormerError('BAD_INPUT', 'window Q-Former: features is required');
  if (!['float32', 'float16', 'bfloat16'].includes(x.dtype))
    throw new QFormerError('BAD_INPUT', `window Q-Former: features must be a float tensor, got ${x.toString()}`);
  const ok = x.rank === 3 && [p, dv].every((d, i) => typeof x.shape[i + 1] !== 'number' || x.shape[i + 1] === d);
  if (!ok) {
    throw new QFormerError(
      'BAD_INPUT',
      `window Q-Former: features must be [num_tiles, ${p}, ${dv}] (${cfg.imageSide}x${cfg.imageSide} patches of width ${dv}), got ${x.toString()}`,
    );
  }
  return x;
}
