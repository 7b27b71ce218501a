import { applyComputeDtype, type ComputeDType, contract, declareInputs, Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { type ErnieResamplerConfig, validateResamplerConfig } from './config.js';
import { ResamplerError } from './errors.js';

/** Values the resampler reads from the caller's graph. */
export interface ErnieResamplerInputs {
  /** The vision tower's output [Np, Dv], patches in the tower's order (each s*s consecutive rows are one merge block). */
  readonly visionHidden: Value;
  /** int64 [Nt]: first rows of each temporal pair (`resamplerInputs(...).firstSlice`). Required with temporal conv. */
  readonly firstSlice?: Value;
  /** int64 [Nt]: second rows of each temporal pair (`resamplerInputs(...).secondSlice`). Required with temporal conv. */
  readonly secondSlice?: Value;
}

export interface ErnieResamplerOutputs {
  /** [Nt, D] in the graph's compute dtype (`visionHidden` is cast to it): one row per placeholder token, items in order. */
  readonly embeds: Value;
}

export interface ErnieResamplerOptions {
  /** Scope of the resampler's nodes and initializers (default `resampler_model`, the hub's module name). */
  readonly scope?: string;
}

/**
 * Adds ERNIE-4.5-VL's VariableResolutionResamplerModel to `g`
 * (vLLM: ernie45_vl.VariableResolutionResamplerModel.forward;
 * HF: Ernie4_5_VLMoeVariableResolutionResamplerModel.forward):
 * spatial merge -> spatial_linear -> temporal slicing -> temporal_linear -> mlp -> after_norm.
 * The slicing indices come from the host (`resamplerInputs`), so one graph serves any mix of grids.
 * `weights` holds the parameters under `expectedParameters(config)`'s names; bf16/fp16 weights are cast to the input dtype.
 */
export function buildErnieResampler(
  g: Graph,
  weights: Weights,
  config: ErnieResamplerConfig,
  inputs: ErnieResamplerInputs,
  options: ErnieResamplerOptions = {},
): ErnieResamplerOutputs {
  const cfg = validateResamplerConfig(config);
  checkInputs(inputs, cfg);
  return g.scope(options.scope ?? 'resampler_model', () => {
    let x = spatialConvReshape(g, g.cast(inputs.visionHidden, 'float32'), cfg);
    x = visionMlp(g, weights, cfg, x, { fc1: 'spatial_linear1', fc2: 'spatial_linear2', norm: 'spatial_norm', frames: 1 });
    if (cfg.useTemporalConv) {
      x = temporalSlicing(g, x, inputs.firstSlice!, inputs.secondSlice!);
      const frames = cfg.temporalMergeSize;
      x = visionMlp(g, weights, cfg, x, { fc1: 'temporal_linear1', fc2: 'temporal_linear2', norm: 'temporal_norm', frames });
    }
    x = nn.linear(g, x, weights, 'mlp', { in: cfg.visionHiddenSize * cfg.spatialMergeSize ** 2, out: cfg.textHiddenSize });
    return { embeds: nn.rmsNorm(g, x, weights, 'after_norm', cfg.rmsNormEps) };
  });
}

/**
 * The standalone model's inputs: `first_slice` / `second_slice` (`resamplerInputs`) only with temporal conv;
 * `vision_hidden_size` is bound from the config.
 */
export const RESAMPLER_INPUTS = contract({
  vision_hidden: ['float32', ['num_patches', 'vision_hidden_size'], { doc: 'the vision tower output' }],
  first_slice: ['int64', ['num_tokens'], { optional: true, doc: 'per merged token, its row of the first frame of its pair' }],
  second_slice: ['int64', ['num_tokens'], { optional: true, doc: 'per merged token, its row of the second frame of its pair' }],
});

/** The standalone model's output: `embeds` [num_tokens, D] float32. */
export const RESAMPLER_OUTPUTS = contract({ embeds: ['float32', ['num_tokens', 'hidden']] });

/** Names of the standalone model's inputs and output (`RESAMPLER_INPUTS`, `RESAMPLER_OUTPUTS`). */
export const RESAMPLER_IO = {
  visionHidden: RESAMPLER_INPUTS.names.vision_hidden,
  firstSlice: RESAMPLER_INPUTS.names.first_slice,
  secondSlice: RESAMPLER_INPUTS.names.second_slice,
  embeds: RESAMPLER_OUTPUTS.names.embeds,
} as const;

/**
 * The resampler alone as a complete graph: inputs `vision_hidden` float32
 * [num_patches, Dv], `first_slice` and `second_slice` int64 [num_tokens]
 * (absent without temporal conv); output `embeds` float32 [num_tokens, D].
 */
export function buildErnieResamplerModel(
  weights: Weights,
  config: ErnieResamplerConfig,
  options: ErnieResamplerOptions & { readonly computeDtype?: ComputeDType | undefined } = {},
): Graph {
  const cfg = validateResamplerConfig(config);
  // Built in float32; another compute dtype is floatConvertPass's.
  const g = new Graph({ name: 'ernie_resampler' });
  const x = declareInputs(g, RESAMPLER_INPUTS, {
    sizes: { vision_hidden_size: cfg.visionHiddenSize },
    include: { first_slice: cfg.useTemporalConv, second_slice: cfg.useTemporalConv },
  });
  const visionHidden = x.vision_hidden;
  const slices = x.first_slice && x.second_slice ? { firstSlice: x.first_slice, secondSlice: x.second_slice } : {};
  const { embeds } = buildErnieResampler(g, weights, cfg, { visionHidden, ...slices }, options);
  g.output(embeds, RESAMPLER_IO.embeds, [cfg.useTemporalConv ? 'num_tokens' : 'num_merged', cfg.textHiddenSize]);
  applyComputeDtype(g, options.computeDtype);
  return g;
}

/** vLLM: spatial_conv_reshape. [Np, Dv] -> [Np/s^2, s^2*Dv]: the tower emits each s x s block as consecutive rows. */
function spatialConvReshape(g: Graph, x: Value, cfg: ErnieResamplerConfig): Value {
  return g.scope('spatial_conv_reshape', () => g.reshape(x, [-1, cfg.visionHiddenSize * cfg.spatialMergeSize ** 2]));
}

/**
 * HF: Ernie4_5_VLMoeVisionMLP (vLLM: fwd_spatial / fwd_temporal):
 * fc1 -> GELU (exact, erf) -> fc2 -> LayerNorm. The hub stores it as an
 * nn.Sequential (`.0`, `.2`, `.3`); vLLM's names are used here. `mlp`:
 * the module names, and how many merged frames' rows come side by side (1
 * for the spatial MLP).
 */
function visionMlp(
  g: Graph,
  w: Weights,
  cfg: ErnieResamplerConfig,
  x: Value,
  mlp: { fc1: string; fc2: string; norm: string; frames: number },
): Value {
  const { fc1, fc2, norm, frames } = mlp;
  const dim = cfg.visionHiddenSize * cfg.spatialMergeSize ** 2; // vLLM: spatial_dim (temporal_dim = frames * spatial_dim)
  const h = nn.linear(g, x, w, fc1, { in: frames * dim, out: dim });
  const a = g.scope(`${fc1}_gelu`, () => g.gelu(h, 'none'));
  return nn.layerNorm(g, nn.linear(g, a, w, fc2, { in: dim, out: dim }), w, norm, cfg.layerNormEps);
}

/**
 * HF: _temporal_slicing (vLLM: fwd_placeholder): the rows of each temporal
 * pair side by side, [Nt, 2*s^2*Dv]: concat([x[first], x[second]], -1).
 */
function temporalSlicing(g: Graph, x: Value, first: Value, second: Value): Value {
  return g.scope('temporal_slicing', () => g.concat([g.gather(x, first, 0), g.gather(x, second, 0)], -1));
}

function checkInputs(inputs: ErnieResamplerInputs, cfg: ErnieResamplerConfig): void {
  const x = inputs.visionHidden;
  const dv = cfg.visionHiddenSize;
  if (!['float32', 'float16', 'bfloat16'].includes(x.dtype)) {
    throw new ResamplerError('BAD_INPUT', `resampler: visionHidden must be a float tensor, got ${x.toString()}`);
  }
  if (x.rank !== 2 || (typeof x.shape[1] === 'number' && x.shape[1] !== dv)) {
    throw new ResamplerError('BAD_INPUT', `resampler: visionHidden must be [num_patches, ${dv}], got ${x.toString()}`);
  }
  if (!cfg.useTemporalConv) return;
  for (const key of ['firstSlice', 'secondSlice'] as const) {
    const v = inputs[key];
    if (v === undefined) {
      throw new ResamplerError(
        'BAD_INPUT',
        `resampler: ${key} is required with temporal conv; compute it with resamplerInputs(gridThw, config)`,
      );
    }
    if (v.dtype !== 'int64' || v.rank !== 1)
      throw new ResamplerError('BAD_INPUT', `resampler: ${key} must be int64 [num_tokens], got ${v.toString()}`);
  }
}
