// ERNIE-4.5-VL as a model family: its checkpoint (./checkpoint.ts: model types, processor, support, config,
// weights, graphs), its model class, its forward outputs, its export manifest rules and its parameter docs.
import { ernie45VlMapping } from '@vlmkit/weight-mapper';
import type { ModelFamily } from '../family.js';
import { ERNIE_CHECKPOINT, type ErnieWeights } from './checkpoint.js';
import { type Ernie45VLConfig, ernie45VLConfig } from './config.js';
import { ernieManifestRules } from './manifest.js';
import { ERNIE_FORWARD_OUTPUTS, ERNIE_INPUT_NAMES, Ernie45VL } from './model.js';
import { ernie28b } from './published-config.js';
import { ernieComponents } from './weights.js';

export const ernie45VL: ModelFamily<Ernie45VLConfig, ErnieWeights, Ernie45VL> = {
  ...ERNIE_CHECKPOINT,
  inputNames: ERNIE_INPUT_NAMES,
  forwardOutputs: ERNIE_FORWARD_OUTPUTS,
  manifest: { key: 'ernie', rules: ernieManifestRules },
  parameterDocs: () => {
    const config = ernie45VLConfig(ernie28b);
    const table = ernie45VlMapping(ernieComponents(config));
    return {
      title: 'ERNIE-4.5-VL (ERNIE-4.5-VL-28B-A3B)',
      table,
      blocks: [
        '### Vision tower',
        `Names relative to the tower (\`vision_model.\` on the hub, \`model.vision_model.\`
as transformers 5.17 saves it).`,
        table.components.vision,
        '### Resampler',
        `Names relative to the resampler (\`model.resampler_model.\` on the hub, vLLM's
renames of the \`nn.Sequential\` indices applied). Without temporal conv the
temporal_* parameters are not read.`,
        table.components.resampler,
        '### Decoder',
        `Names relative to the decoder (\`model.\` and \`lm_head.\` on the hub). The hub stores
all experts of a layer in one list: text experts \`j < Et\`, then vision experts
\`j = Et + e\` (vLLM's moe_offset); the routers transposed (\`[D, E]\`) as
\`mlp.gate.weight\` / \`mlp.gate.weight_1\`; both correction biases as the rows of
\`mlp.moe_statics.e_score_correction_bias\`. Each expert is read as stored, in
place. Tied embeddings: the head reads
\`embed_tokens.weight\`, no \`lm_head.weight\` is read (a stored one is ignored).`,
        table.components.decoder,
      ],
    };
  },
  load: (dir, options) => Ernie45VL.fromPretrained(dir, options),
};
