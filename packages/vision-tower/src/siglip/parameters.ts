import type { ParameterSpec } from '../types.js';
import { type SiglipVisionConfig, siglipNumPatches } from './config.js';

/**
 * SigLIP's parameters, named like vLLM's SiglipVisionTransformer (the
 * `vision_model.` level of the hub names stripped) with vLLM's packed
 * `self_attn.qkv_proj` (q rows, then k, then v). `post_layernorm.*` only when
 * `postLayerNorm` (Granite 4 Vision does not use it).
 */
export function expectedSiglipVisionParameters(config: SiglipVisionConfig, options: { postLayerNorm?: boolean } = {}): ParameterSpec[] {
  const { hiddenSize: d, intermediateSize: i, numChannels: c, patchSize: p } = config;
  const out: ParameterSpec[] = [
    { name: 'embeddings.patch_embedding.weight', shape: [d, c, p, p] },
    { name: 'embeddings.patch_embedding.bias', shape: [d] },
    { name: 'embeddings.position_embedding.weight', shape: [siglipNumPatches(config), d] },
  ];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const m = `encoder.layers.${l}`;
    out.push(
      { name: `${m}.layer_norm1.weight`, shape: [d] },
      { name: `${m}.layer_norm1.bias`, shape: [d] },
      { name: `${m}.self_attn.qkv_proj.weight`, shape: [3 * d, d] },
      { name: `${m}.self_attn.qkv_proj.bias`, shape: [3 * d] },
      { name: `${m}.self_attn.out_proj.weight`, shape: [d, d] },
      { name: `${m}.self_attn.out_proj.bias`, shape: [d] },
      { name: `${m}.layer_norm2.weight`, shape: [d] },
      { name: `${m}.layer_norm2.bias`, shape: [d] },
      { name: `${m}.mlp.fc1.weight`, shape: [i, d] },
      { name: `${m}.mlp.fc1.bias`, shape: [i] },
      { name: `${m}.mlp.fc2.weight`, shape: [d, i] },
      { name: `${m}.mlp.fc2.bias`, shape: [d] },
    );
  }
  if (options.postLayerNorm) out.push({ name: 'post_layernorm.weight', shape: [d] }, { name: 'post_layernorm.bias', shape: [d] });
  return out;
}
