// What an ERNIE-4.5-VL checkpoint is (model types, processor, what it supports) and how it becomes its two
// graphs: the config read once, the weights mapped, the vision encoder (ViT + resampler) and the MoE decoder
// built. Loads, export and inspect all take these.
import { buildErnieDecodeLoopModel, buildErnieTextDecoderModel } from '@vlmkit/moe-decoder';
import { computeDtypePasses, type Weights } from '@vlmkit/onnx-graph';
import { ERNIE_PROCESSOR } from '@vlmkit/processors';
import type { MappingReport } from '@vlmkit/weight-mapper';
import type { FamilyCheckpoint } from '../family.js';
import { type Ernie45VLConfig, ernie45VLConfig } from './config.js';
import { buildErnieVisionEncoder } from './vision-encoder.js';
import { loadErnieWeights } from './weights.js';

export interface ErnieWeights {
  readonly vision: Weights;
  readonly resampler: Weights;
  readonly decoder: Weights;
  readonly report: MappingReport;
}

export const ERNIE_CHECKPOINT: FamilyCheckpoint<Ernie45VLConfig, ErnieWeights> = {
  name: 'ERNIE-4.5-VL',
  modelTypes: ['ernie4_5_vl_moe', 'ernie4_5_moe_vl'],
  supports: { adapter: false, video: ERNIE_PROCESSOR.video },
  processor: ERNIE_PROCESSOR,
  cacheName: 'ernie',
  config: (json, generation, { reference }) => ernie45VLConfig(json, reference ?? 'vllm', generation),
  weights: (ckpt, config, { allowMissing }) => loadErnieWeights(ckpt, config, allowMissing ? { allowMissing } : {}),
  visionGraph: buildErnieVisionEncoder,
  decoderGraph: (config, w, { loop, kvCache, quantize, passes, emptyModalityIf, computeDtype, logitsToKeep }) => {
    // Built in float32; a 16-bit decoder is converted first, then the profile's passes run.
    const all = [...computeDtypePasses(computeDtype), ...passes];
    return loop === 'graph'
      ? buildErnieDecodeLoopModel(w.decoder, config.text, { quantize, passes: all, emptyModalityIf })
      : buildErnieTextDecoderModel(w.decoder, config.text, { logitsToKeep, kvCache, quantize, passes: all, emptyModalityIf });
  },
};
