// Granite 4 Vision as a model family: its checkpoint (./checkpoint.ts: model types, processor, support, config,
// weights, graphs), its model class, its forward outputs, its export manifest rules and its parameter docs.
import { granite4VisionMapping } from '@vlmkit/weight-mapper';
import type { ModelFamily } from '../family.js';
import { GRANITE_CHECKPOINT, type GraniteWeights } from './checkpoint.js';
import { type Granite4VisionConfig, granite4VisionConfig } from './config.js';
import { graniteManifestRules } from './manifest.js';
import { GRANITE_FORWARD_OUTPUTS, GRANITE_INPUT_NAMES, Granite4Vision } from './model.js';
import { granite3b } from './published-config.js';
import { graniteComponents } from './weights.js';

export const granite4Vision: ModelFamily<Granite4VisionConfig, GraniteWeights, Granite4Vision> = {
  ...GRANITE_CHECKPOINT,
  inputNames: GRANITE_INPUT_NAMES,
  forwardOutputs: GRANITE_FORWARD_OUTPUTS,
  manifest: { key: 'granite', rules: graniteManifestRules },
  parameterDocs: () => {
    const config = granite4VisionConfig(granite3b);
    const table = granite4VisionMapping(graniteComponents(config, config.text));
    return {
      title: 'Granite 4 Vision (granite-4.0-3b-vision)',
      table,
      blocks: [
        '### Vision tower (SigLIP)',
        `Names relative to the tower (\`model.vision_tower.\`, also
\`model.vision_tower.vision_model.\`), vLLM's packed \`self_attn.qkv_proj\`
(q rows, then k, then v). \`post_layernorm\` is not read (vLLM:
require_post_norm=False: Granite reads the hidden states before it).`,
        table.components.vision,
        '### Projectors',
        `The window Q-Former downsamplers under their checkpoint module names
(\`layerwise_projectors.{k}\`, k in \`deepstack_layer_map\` order, and
\`spatial_projectors.{k}\`, k = 0..3 = TL, TR, BL, BR; relative to \`model.\`)
and \`image_newline\`. HF 5.17, vLLM and the checkpoint use the same module tree,
so nothing is renamed. Inside each, \`qformer.\` is HF's Blip2QFormerModel: layer
i has the \`crossattention\` block only when i % \`cross_attention_frequency\` == 0;
the text path (\`intermediate\`, \`output\`, with \`use_qformer_text_input\`) is not read.`,
        table.components.projectors,
        '### Decoder',
        `Names relative to the decoder (\`model.language_model.\` and \`lm_head.\`), vLLM
GraniteModel's with its packed \`qkv_proj\` and \`mlp.gate_up_proj\`; the hub 4.0
checkpoints (\`granitemoehybrid\`) store the MLP as \`shared_mlp.input_linear\`
(gate rows, then up) / \`shared_mlp.output_linear\`. Tied embeddings: no
\`lm_head.weight\` is read.`,
        table.components.decoder,
      ],
    };
  },
  load: (dir, options) => Granite4Vision.fromPretrained(dir, options),
};
