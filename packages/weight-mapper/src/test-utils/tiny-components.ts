/**
 * The components' parameter lists for the tiny fixtures (test-fixtures/ernie-tiny,
 * granite-tiny), spelled out by hand: this package may not depend on the
 * component packages whose `expectedParameters` derive them. @vlmkit/models
 * maps the same fixtures with the derived lists.
 */
import type { ParameterSpec } from '@vlmkit/onnx-graph';
import type { Ernie45VlComponents } from '../ernie45-vl.js';
import type { Granite4VisionComponents } from '../granite4-vision.js';

type Shapes<C extends string> = Record<C, Record<string, number[]>>;

const list = (shapes: Record<string, number[]>): ParameterSpec[] => Object.entries(shapes).map(([name, shape]) => ({ name, shape }));

/** The ERNIE mapper's input for `shapes` (default the tiny lists); Et = Ev = 4. */
export function ernieTinyComponents(
  shapes: Shapes<'vision' | 'resampler' | 'decoder'> = ernieTinyShapes(),
  tied = true,
): Ernie45VlComponents {
  return {
    vision: { parameters: list(shapes.vision) },
    resampler: { parameters: list(shapes.resampler) },
    decoder: { parameters: list(shapes.decoder), config: { tieWordEmbeddings: tied, moe: { numExperts: [4, 4] } } },
  };
}

/** The Granite mapper's input for the tiny lists. */
export function graniteTinyComponents(shapes: Shapes<'vision' | 'projectors' | 'decoder'> = graniteTinyShapes()): Granite4VisionComponents {
  return {
    vision: { parameters: list(shapes.vision) },
    projectors: { parameters: list(shapes.projectors) },
    decoder: { parameters: list(shapes.decoder), config: { tieWordEmbeddings: true } },
  };
}

/**
 * docs/parameter-names.md for the ERNIE tiny config, spelled out: what the
 * components list (the decoder both expert layouts, stacked and per expert;
 * tied, so no lm_head).
 */
export function ernieTinyShapes(): Record<'vision' | 'resampler' | 'decoder', Record<string, number[]>> {
  const vision: Record<string, number[]> = { 'patch_embed.proj.weight': [32, 3 * 14 * 14], 'ln.weight': [32], 'ln.bias': [32] };
  for (const b of [0, 1]) {
    for (const n of ['norm1', 'norm2']) Object.assign(vision, { [`blocks.${b}.${n}.weight`]: [32], [`blocks.${b}.${n}.bias`]: [32] });
    Object.assign(vision, {
      [`blocks.${b}.attn.qkv.weight`]: [96, 32],
      [`blocks.${b}.attn.qkv.bias`]: [96],
      [`blocks.${b}.attn.proj.weight`]: [32, 32],
      [`blocks.${b}.attn.proj.bias`]: [32],
      [`blocks.${b}.mlp.fc1.weight`]: [128, 32],
      [`blocks.${b}.mlp.fc1.bias`]: [128],
      [`blocks.${b}.mlp.fc2.weight`]: [32, 128],
      [`blocks.${b}.mlp.fc2.bias`]: [32],
    });
  }
  const resampler: Record<string, number[]> = {
    'spatial_linear1.weight': [128, 128],
    'spatial_linear1.bias': [128],
    'spatial_linear2.weight': [128, 128],
    'spatial_linear2.bias': [128],
    'spatial_norm.weight': [128],
    'spatial_norm.bias': [128],
    'temporal_linear1.weight': [128, 256],
    'temporal_linear1.bias': [128],
    'temporal_linear2.weight': [128, 128],
    'temporal_linear2.bias': [128],
    'temporal_norm.weight': [128],
    'temporal_norm.bias': [128],
    'mlp.weight': [64, 128],
    'mlp.bias': [64],
    'after_norm.weight': [64],
  };
  const decoder: Record<string, number[]> = { 'embed_tokens.weight': [256, 64], 'norm.weight': [64] };
  for (const i of [0, 1, 2, 3]) {
    const L = `layers.${i}.`;
    Object.assign(decoder, {
      [`${L}input_layernorm.weight`]: [64],
      [`${L}post_attention_layernorm.weight`]: [64],
      [`${L}self_attn.qkv_proj.weight`]: [(4 + 2 * 2) * 16, 64],
      [`${L}self_attn.o_proj.weight`]: [64, 64],
    });
    if (i === 0) {
      Object.assign(decoder, { [`${L}mlp.gate_up_proj.weight`]: [256, 64], [`${L}mlp.down_proj.weight`]: [64, 128] });
      continue;
    }
    Object.assign(decoder, {
      [`${L}mlp.text_experts_gate.weight`]: [4, 64],
      [`${L}mlp.vision_experts_gate.weight`]: [4, 64],
      [`${L}mlp.text_experts.e_score_correction_bias`]: [4],
      [`${L}mlp.vision_experts.e_score_correction_bias`]: [4],
      [`${L}mlp.text_experts.w13_weight`]: [4, 128, 64],
      [`${L}mlp.text_experts.w2_weight`]: [4, 64, 64],
      [`${L}mlp.vision_experts.w13_weight`]: [4, 64, 64],
      [`${L}mlp.vision_experts.w2_weight`]: [4, 64, 32],
      [`${L}mlp.shared_experts.gate_up_proj.weight`]: [128, 64],
      [`${L}mlp.shared_experts.down_proj.weight`]: [64, 64],
    });
    for (const [m, I] of [
      ['text', 64],
      ['vision', 32],
    ] as const) {
      for (const e of [0, 1, 2, 3]) {
        Object.assign(decoder, {
          [`${L}mlp.${m}_experts.${e}.gate_proj.weight`]: [I, 64],
          [`${L}mlp.${m}_experts.${e}.up_proj.weight`]: [I, 64],
          [`${L}mlp.${m}_experts.${e}.down_proj.weight`]: [64, I],
        });
      }
    }
  }
  return { vision, resampler, decoder };
}

/** The Granite tiny config's lists: SigLIP without post_layernorm, 4 + 4 projectors and image_newline, a tied decoder. */
export function graniteTinyShapes(): Record<'vision' | 'projectors' | 'decoder', Record<string, number[]>> {
  const vision: Record<string, number[]> = {
    'embeddings.patch_embedding.weight': [32, 3, 8, 8],
    'embeddings.patch_embedding.bias': [32],
    'embeddings.position_embedding.weight': [64, 32],
  };
  for (const l of [0, 1, 2, 3]) {
    const L = `encoder.layers.${l}.`;
    Object.assign(vision, {
      [`${L}layer_norm1.weight`]: [32],
      [`${L}layer_norm1.bias`]: [32],
      [`${L}layer_norm2.weight`]: [32],
      [`${L}layer_norm2.bias`]: [32],
      [`${L}self_attn.qkv_proj.weight`]: [96, 32],
      [`${L}self_attn.qkv_proj.bias`]: [96],
      [`${L}self_attn.out_proj.weight`]: [32, 32],
      [`${L}self_attn.out_proj.bias`]: [32],
      [`${L}mlp.fc1.weight`]: [64, 32],
      [`${L}mlp.fc1.bias`]: [64],
      [`${L}mlp.fc2.weight`]: [32, 64],
      [`${L}mlp.fc2.bias`]: [32],
    });
  }
  const projectors: Record<string, number[]> = { image_newline: [64] };
  for (const P of [0, 1, 2, 3].flatMap((k) => [`layerwise_projectors.${k}.`, `spatial_projectors.${k}.`])) {
    Object.assign(projectors, {
      [`${P}query`]: [1, 4, 32],
      [`${P}image_positions`]: [1, 16, 32],
      [`${P}norm.weight`]: [32],
      [`${P}norm.bias`]: [32],
      [`${P}out_linear.weight`]: [64, 32],
      [`${P}out_linear.bias`]: [64],
      [`${P}qformer.layernorm.weight`]: [32],
      [`${P}qformer.layernorm.bias`]: [32],
    });
    const L = `${P}qformer.encoder.layer.0.`;
    for (const A of ['attention', 'crossattention']) {
      for (const x of ['attention.query', 'attention.key', 'attention.value', 'output.dense'])
        Object.assign(projectors, { [`${L}${A}.${x}.weight`]: [32, 32], [`${L}${A}.${x}.bias`]: [32] });
      Object.assign(projectors, { [`${L}${A}.output.LayerNorm.weight`]: [32], [`${L}${A}.output.LayerNorm.bias`]: [32] });
    }
    Object.assign(projectors, {
      [`${L}intermediate_query.dense.weight`]: [64, 32],
      [`${L}intermediate_query.dense.bias`]: [64],
      [`${L}output_query.dense.weight`]: [32, 64],
      [`${L}output_query.dense.bias`]: [32],
      [`${L}output_query.LayerNorm.weight`]: [32],
      [`${L}output_query.LayerNorm.bias`]: [32],
    });
  }
  const decoder: Record<string, number[]> = { 'embed_tokens.weight': [256, 64], 'norm.weight': [64] };
  for (const l of [0, 1, 2, 3, 4, 5, 6, 7]) {
    const L = `layers.${l}.`;
    Object.assign(decoder, {
      [`${L}input_layernorm.weight`]: [64],
      [`${L}post_attention_layernorm.weight`]: [64],
      [`${L}self_attn.qkv_proj.weight`]: [(4 + 2 * 2) * 16, 64],
      [`${L}self_attn.o_proj.weight`]: [64, 64],
      [`${L}mlp.gate_up_proj.weight`]: [256, 64],
      [`${L}mlp.down_proj.weight`]: [64, 128],
    });
  }
  return { vision, projectors, decoder };
}
