import { type ConfigObject, fields } from '@vlmkit/config';
import { type Qwen3VlTextConfig, qwen3VlTextConfigFromFields } from '@vlmkit/moe-decoder';
import { Qwen3VlVisionConfig } from '@vlmkit/vision-tower';
import { type GenerationTokens, generationTokens } from '../generation-tokens.js';

/** The config.json model types the family reads: dense Qwen3-VL and Qwen3-VL-MoE (HF 5.17 names). */
export const QWEN3VL_MODEL_TYPES = ['qwen3_vl', 'qwen3_vl_moe'] as const;
export type Qwen3VlModelType = (typeof QWEN3VL_MODEL_TYPES)[number];

/** The token ids a Qwen3-VL prompt is read with. */
export interface Qwen3VlTokens extends GenerationTokens {
  image: number;
  video: number;
  visionStart: number;
  visionEnd: number;
}

export interface Qwen3VLConfig {
  readonly modelType: Qwen3VlModelType;
  readonly vision: Qwen3VlVisionConfig;
  readonly text: Qwen3VlTextConfig;
  readonly tokens: Qwen3VlTokens;
}

/** Where the token defaults come from (transformers 5.17 configuration_qwen3_vl{,_moe}.py: the same values). */
const HF_TOP = { qwen3_vl: 'HF Qwen3VLConfig', qwen3_vl_moe: 'HF Qwen3VLMoeConfig' } as const;

/**
 * The family's config normalizer. Reads a Qwen3-VL or Qwen3-VL-MoE config.json (HF 5.17 layout or the
 * published one: `rope_parameters` or `rope_scaling` + `rope_theta`, `num_local_experts` or `num_experts`)
 * once: the vision tower's config from `vision_config`, the decoder's from `text_config` and the top-level
 * `tie_word_embeddings`, the token ids from the top level. Throws `ConfigError` naming the field.
 */
export function qwen3VLConfig(json: Record<string, unknown>, generationConfig?: unknown): Qwen3VLConfig {
  const top = fields(json, 'Qwen3-VL config');
  const modelType = top.oneOf('model_type', QWEN3VL_MODEL_TYPES, { code: 'UNSUPPORTED_CONFIG' });
  // HF Qwen3VL(Moe)Config.__post_init__: published checkpoints name the vision config by the model's type.
  const vj = top.optionalObj('vision_config')?.json ?? {};
  const visionJson = vj.model_type === modelType ? { ...vj, model_type: `${modelType}_vision` } : vj;
  const vision = Qwen3VlVisionConfig.fromFields(fields(visionJson, top.config, 'vision_config'));
  const text = qwen3VlTextConfigFromFields(top, modelType);
  if (vision.outHiddenSize !== text.hiddenSize) {
    top.fail(
      'INCONSISTENT_CONFIG',
      'vision_config.out_hidden_size',
      `(${vision.outHiddenSize}) must equal text_config.hidden_size (${text.hiddenSize}): the mergers write the decoder's rows.`,
    );
  }
  if (vision.deepstackVisualIndexes.length > text.numHiddenLayers) {
    top.fail(
      'INCONSISTENT_CONFIG',
      'vision_config.deepstack_visual_indexes',
      `has ${vision.deepstackVisualIndexes.length} levels; the decoder has ${text.numHiddenLayers} layers to add them after.`,
    );
  }
  return { modelType, vision, text, tokens: qwen3VlTokens(top, modelType, text.vocabSize, generationConfig) };
}

function qwen3VlTokens(c: ConfigObject, type: Qwen3VlModelType, vocab: number, generationConfig: unknown): Qwen3VlTokens {
  const id = (key: string, fallback: number) => {
    const v = c.int(key, { min: 0, default: fallback, from: HF_TOP[type] });
    if (v >= vocab) c.fail('INCONSISTENT_CONFIG', key, `(${v}) must be below text_config.vocab_size (${vocab}): it is a token id.`);
    return v;
  };
  return {
    image: id('image_token_id', 151655),
    video: id('video_token_id', 151656),
    visionStart: id('vision_start_token_id', 151652),
    visionEnd: id('vision_end_token_id', 151653),
    ...generationTokens(c.json, generationConfig),
  };
}
