// What a Qwen3-VL / Qwen3-VL-MoE checkpoint is (model type, processor, what it supports) and how it becomes its
// two graphs: the config read once, the weights mapped, the vision encoder (ViT + mergers) and the decoder
// (dense or MoE, deepstack) built. Loads, export and inspect all take these.
import { buildQwen3VlDecodeLoopModel, buildQwen3VlTextDecoderModel } from '@vlmkit/moe-decoder';
import { computeDtypePasses, type Weights } from '@vlmkit/onnx-graph';
import { QWEN3_VL_MOE_PROCESSOR, QWEN3_VL_PROCESSOR } from '@vlmkit/processors';
import type { MappingReport } from '@vlmkit/weight-mapper';
import type { FamilyCheckpoint } from '../family.js';
import { type Qwen3VLConfig, type Qwen3VlModelType, qwen3VLConfig } from './config.js';
import { buildQwen3VlVisionEncoder } from './vision-encoder.js';
import { loadQwen3VlWeights } from './weights.js';

export interface Qwen3VlWeights {
  readonly vision: Weights;
  readonly decoder: Weights;
  readonly report: MappingReport;
}

const NAMES = {
  qwen3_vl: { name: 'Qwen3-VL', cacheName: 'qwen3vl', processor: QWEN3_VL_PROCESSOR },
  qwen3_vl_moe: { name: 'Qwen3-VL-MoE', cacheName: 'qwen3vl-moe', processor: QWEN3_VL_MOE_PROCESSOR },
} as const;

/** The checkpoint spec of one model type: the two share everything but their names. */
export function qwen3VlCheckpoint(modelType: Qwen3VlModelType): FamilyCheckpoint<Qwen3VLConfig, Qwen3VlWeights> {
  return {
    ...NAMES[modelType],
    modelTypes: [modelType],
    supports: { adapter: false, video: NAMES[modelType].processor.video },
    config: (json, generation) => qwen3VLConfig(json, generation),
    weights: (ckpt, config, { allowMissing }) => loadQwen3VlWeights(ckpt, config, allowMissing ? { allowMissing } : {}),
    visionGraph: buildQwen3VlVisionEncoder,
    decoderGraph: (config, w, { loop, kvCache, quantize, passes, computeDtype, logitsToKeep }) => {
      const deepstackLevels = config.vision.deepstackVisualIndexes.length;
      // Built in float32; a 16-bit decoder is converted first, then the profile's passes run.
      const all = [...computeDtypePasses(computeDtype), ...passes];
      return loop === 'graph'
        ? buildQwen3VlDecodeLoopModel(w.decoder, config.text, { deepstackLevels, quantize, passes: all })
        : buildQwen3VlTextDecoderModel(w.decoder, config.text, { deepstackLevels, logitsToKeep, kvCache, quantize, passes: all });
    },
  };
}
