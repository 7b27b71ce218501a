// Qwen3-VL and Qwen3-VL-MoE as model families: one spec per model type from one folder (./checkpoint.ts:
// processor, config, weights, graphs), their model class, forward outputs, manifest rules and parameter docs.
import { qwen3VlMapping } from '@vlmkit/weight-mapper';
import type { ModelFamily, ParameterDocs } from '../family.js';
import { type Qwen3VlWeights, qwen3VlCheckpoint } from './checkpoint.js';
import { type Qwen3VLConfig, type Qwen3VlModelType, qwen3VLConfig } from './config.js';
import { qwen3VlManifestRules } from './manifest.js';
import { QWEN3VL_FORWARD_OUTPUTS, QWEN3VL_INPUT_NAMES, Qwen3VL } from './model.js';
import { qwen3Vl2b, qwen3VlMoe30b } from './published-config.js';
import { qwen3VlComponents } from './weights.js';

const PUBLISHED = {
  qwen3_vl: { title: 'Qwen3-VL (Qwen3-VL-2B-Instruct)', json: qwen3Vl2b },
  qwen3_vl_moe: { title: 'Qwen3-VL-MoE (Qwen3-VL-30B-A3B-Instruct)', json: qwen3VlMoe30b },
} as const;

function parameterDocs(modelType: Qwen3VlModelType): ParameterDocs {
  const { title, json } = PUBLISHED[modelType];
  const config = qwen3VLConfig(json);
  const table = qwen3VlMapping(qwen3VlComponents(config));
  const experts =
    modelType === 'qwen3_vl_moe'
      ? `
Each routed expert is read in place from the fused \`mlp.experts.gate_up_proj\` [E, 2I, H] (gate
rows, then up) and \`mlp.experts.down_proj\` [E, H, I] as HF 5.17 saves them; original checkpoints'
transposes ([E, H, 2I], [E, I, H]) are told apart by shape, as HF does.
`
      : '\n';
  return {
    title,
    table,
    blocks: [
      '### Vision tower and mergers',
      `Names relative to the tower (\`model.visual.\`): HF's module tree, with the packed
\`blocks.{i}.attn.qkv\`; the blocks' MLP is ERNIE's module (\`mlp.fc1/2\`, HF's \`mlp.linear_fc1/2\`);
\`merger\` and \`deepstack_merger_list.{k}\`.`,
      table.components.vision,
      '### Decoder',
      `Names relative to the decoder (\`model.language_model.\` and \`lm_head.\`), vLLM Qwen3's
with its packed \`qkv_proj\` and dense \`mlp.gate_up_proj\`.${experts}Tied embeddings (the top-level
\`tie_word_embeddings\`): no \`lm_head.weight\` is read.`,
      table.components.decoder,
    ],
  };
}

function family(modelType: Qwen3VlModelType): ModelFamily<Qwen3VLConfig, Qwen3VlWeights, Qwen3VL> {
  const checkpoint = qwen3VlCheckpoint(modelType);
  return {
    ...checkpoint,
    inputNames: QWEN3VL_INPUT_NAMES,
    forwardOutputs: QWEN3VL_FORWARD_OUTPUTS,
    manifest: { key: 'qwen3vl', rules: qwen3VlManifestRules },
    parameterDocs: () => parameterDocs(modelType),
    load: (dir, options) => Qwen3VL.fromPretrained(dir, options),
  };
}

export const qwen3VL = family('qwen3_vl');
export const qwen3VLMoe = family('qwen3_vl_moe');
