/**
 * The real checkpoints' shapes, without their weights: every graph builds for
 * the published configs of ERNIE-4.5-VL-28B-A3B and granite-4.0-3b-vision
 * (shape checks at real sizes, the expected parameter lists agree with what
 * the builders read). Weights are lazy tensors that fail if anything tries to
 * read them, so this costs milliseconds, not 56 GB.
 */

import {
  buildErnieTextDecoderModel,
  buildGraniteTextDecoderModel,
  ernieTextExpectedParameters,
  graniteTextConfigFromHf,
  graniteTextExpectedParameters,
} from '@vlmkit/moe-decoder';
import { type Graph, lazyTensor, type TensorRef, Weights } from '@vlmkit/onnx-graph';
import { expectedParameters as windowParameters } from '@vlmkit/qformer';
import { expectedParameters as resamplerParameters } from '@vlmkit/resampler';
import { expectedErnieVisionParameters, expectedSiglipVisionParameters } from '@vlmkit/vision-tower';
import { describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { granite4VisionConfig } from './granite/config.js';
import { buildGraniteVisionEncoder } from './granite/vision-encoder.js';

function unread(specs: readonly { name: string; shape: readonly number[] }[], dtype = 'bfloat16', prefix = ''): Map<string, TensorRef> {
  const m = new Map<string, TensorRef>();
  for (const s of specs) {
    m.set(
      prefix + s.name,
      lazyTensor(dtype, s.shape, async () => {
        throw new Error(`${s.name} must not be read while building`);
      }),
    );
  }
  return m;
}

/** Node count and checkpoint parameters embedded (the bf16 initializers; constants the builders add are float32/int64). */
function stats(g: Graph): { nodes: number; params: number } {
  const snap = g.snapshot();
  const weights = snap.initializers.filter((e) => e.ref.dtype === 'bfloat16');
  return { nodes: snap.nodes.length, params: weights.reduce((a, e) => a + e.ref.shape.reduce((x, y) => x * y, 1), 0) };
}

// ERNIE-4.5-VL-28B-A3B, hub (Baidu) layout: MODEL_NOTES.md.
const ernie28b = {
  model_type: 'ernie4_5_moe_vl',
  hidden_size: 2560,
  intermediate_size: 12288,
  num_hidden_layers: 28,
  num_attention_heads: 20,
  num_key_value_heads: 4,
  vocab_size: 103424,
  rms_norm_eps: 1e-5,
  rope_theta: 500000,
  freq_allocation: 20,
  tie_word_embeddings: true,
  use_bias: false,
  hidden_act: 'silu',
  moe_num_experts: [64, 64],
  moe_intermediate_size: [1536, 512],
  moe_k: 6,
  moe_num_shared_experts: 2,
  moe_layer_start_index: [1, 1],
  moe_layer_end_index: [29, 28],
  moe_layer_interval: 1,
  pixel_hidden_size: 1280,
  spatial_conv_size: 2,
  temporal_conv_size: 2,
  use_temporal_conv: true,
  im_patch_id: 100295,
  image_start_token_id: 101304,
  image_end_token_id: 101305,
  video_start_token_id: 101306,
  video_end_token_id: 101307,
  vision_config: {
    depth: 32,
    embed_dim: 1280,
    hidden_size: 1280,
    hidden_act: 'quick_gelu',
    in_channels: 3,
    mlp_ratio: 4,
    num_heads: 16,
    patch_size: 14,
    spatial_merge_size: 2,
  },
};

// granite-4.0-3b-vision: MODEL_NOTES.md (text model_type granitemoehybrid, every layer attention).
const granite3b = {
  model_type: 'granite4_vision',
  image_token_index: 100352,
  downsample_rate: '4/8',
  deepstack_layer_map: [
    [-19, 9],
    [-13, 6],
    [-7, 3],
    [-1, 0],
  ],
  spatial_target_layers: [12, 15, 18, 21],
  spatial_vision_layer: -1,
  use_spatial_sampling: true,
  use_image_newline_parameter: true,
  vision_feature_select_strategy: 'full',
  image_grid_pinpoints: [
    [384, 768],
    [768, 384],
    [768, 768],
    [384, 1152],
    [1152, 384],
    [1152, 1152],
  ],
  vision_config: {
    model_type: 'siglip_vision_model',
    num_hidden_layers: 27,
    hidden_size: 1152,
    intermediate_size: 4304,
    num_attention_heads: 16,
    image_size: 384,
    patch_size: 16,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
  },
  text_config: {
    model_type: 'granitemoehybrid',
    hidden_size: 2560,
    shared_intermediate_size: 8192,
    intermediate_size: 8192,
    num_hidden_layers: 40,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    vocab_size: 100353,
    embedding_multiplier: 12,
    attention_multiplier: 0.015625,
    residual_multiplier: 0.22,
    logits_scaling: 10,
    rope_theta: 1e7,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: true,
    layer_types: Array.from({ length: 40 }, () => 'attention'),
    num_local_experts: 0,
  },
  tie_word_embeddings: true,
};

describe('graphs build for the published configs (no weights read)', () => {
  it('ERNIE-4.5-VL-28B-A3B: vision encoder (0.6B) and MoE decoder (28B), both expert paths', () => {
    const config = ernie45VLConfig(ernie28b);
    const t0 = performance.now();
    const vision = buildErnieVisionEncoder(
      Weights.from(unread(expectedErnieVisionParameters(config.vision))),
      Weights.from(unread(resamplerParameters(config.resampler))),
      config,
    );
    const decoderWeights = Weights.from(unread(ernieTextExpectedParameters(config.text)));
    const sparse = buildErnieTextDecoderModel(decoderWeights, config.text);
    const all = buildErnieTextDecoderModel(decoderWeights, config.text, { experts: 'all' });
    const ms = performance.now() - t0;
    const [v, s, d] = [stats(vision), stats(sparse), stats(all)];
    // Published sizes: ~28.3B parameters in all (text + vision + resampler), tied head stored once.
    expect((v.params + s.params) / 1e9).toBeGreaterThan(27);
    expect((v.params + s.params) / 1e9).toBeLessThan(30);
    expect(d.params).toBe(s.params);
    expect(ms).toBeLessThan(20_000);
  });

  it('granite-4.0-3b-vision: vision encoder (SigLIP + 8 projectors) and the 40-layer decoder', () => {
    const config = granite4VisionConfig(granite3b);
    const text = graniteTextConfigFromHf(granite3b);
    const projectors = new Map<string, TensorRef>([['image_newline', lazyTensor('bfloat16', [2560], async () => new Uint16Array(2560))]]);
    for (const p of ['layerwise_projectors', 'spatial_projectors']) {
      for (let k = 0; k < 4; k++)
        for (const [n, r] of unread(windowParameters(config.projector), 'bfloat16', `${p}.${k}.`)) projectors.set(n, r);
    }
    const vision = buildGraniteVisionEncoder(
      Weights.from(unread(expectedSiglipVisionParameters(config.vision))),
      Weights.from(projectors),
      config,
    );
    const decoder = buildGraniteTextDecoderModel(Weights.from(unread(graniteTextExpectedParameters(text))), text, {
      levels: config.levels.map((l) => l.llmLayer),
    });
    expect(config.levels.map((l) => l.llmLayer)).toEqual([9, 6, 3, 0, 12, 15, 18, 21]);
    const [v, d] = [stats(vision), stats(decoder)];
    // ~0.4B SigLIP + 8 x ~21M projectors; ~3.5B decoder with the tied 100353 x 2560 table.
    expect(v.params / 1e6).toBeGreaterThan(500);
    expect(d.params / 1e9).toBeGreaterThan(3);
    expect(d.params / 1e9).toBeLessThan(4);
  });
});
