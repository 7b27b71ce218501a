import type { ParameterSpec } from '../types.js';
import type { ErnieVisionConfig } from './config.js';

/** The tower's parameters (docs/parameter-names.md, vision tower table), in module order. */
export function expectedErnieVisionParameters(config: ErnieVisionConfig): ParameterSpec[] {
  const { hiddenSize: d, intermediateSize: i, inChannels: c, patchSize: p } = config;
  const out: ParameterSpec[] = [{ name: 'patch_embed.proj.weight', shape: [d, c * p * p] }];
  for (let b = 0; b < config.depth; b++) {
    const m = `blocks.${b}`;
    out.push(
      { name: `${m}.norm1.weight`, shape: [d] },
      { name: `${m}.norm1.bias`, shape: [d] },
      { name: `${m}.attn.qkv.weight`, shape: [3 * d, d] },
      { name: `${m}.attn.qkv.bias`, shape: [3 * d] },
      { name: `${m}.attn.proj.weight`, shape: [d, d] },
      { name: `${m}.attn.proj.bias`, shape: [d] },
      { name: `${m}.norm2.weight`, shape: [d] },
      { name: `${m}.norm2.bias`, shape: [d] },
      { name: `${m}.mlp.fc1.weight`, shape: [i, d] },
      { name: `${m}.mlp.fc1.bias`, shape: [i] },
      { name: `${m}.mlp.fc2.weight`, shape: [d, i] },
      { name: `${m}.mlp.fc2.bias`, shape: [d] },
    );
  }
  out.push({ name: 'ln.weight', shape: [d] }, { name: 'ln.bias', shape: [d] });
  return out;
}
