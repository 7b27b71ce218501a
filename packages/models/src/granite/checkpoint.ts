// What a Granite 4 Vision checkpoint is (model types, processor, what it supports) and how it becomes its two
// graphs: the config read once, the weights mapped (a LoRA
// adapter merged into the language model), the vision encoder (SigLIP + window Q-Former projectors + anyres
// packing) and the deepstack decoder built. Loads, export and inspect all take these.
import { buildGraniteDecodeLoopModel, buildGraniteTextDecoderModel } from '@vlmkit/moe-decoder';
import { computeDtypePasses, type Weights } from '@vlmkit/onnx-graph';
import { GRANITE_PROCESSOR } from '@vlmkit/processors';
import { loraOverlay, type MappingReport } from '@vlmkit/weight-mapper';
import type { FamilyCheckpoint } from '../family.js';
import { type Granite4VisionConfig, granite4VisionConfig } from './config.js';
import { buildGraniteVisionEncoder } from './vision-encoder.js';
import { loadGraniteWeights } from './weights.js';

export interface GraniteWeights {
  readonly vision: Weights;
  readonly projectors: Weights;
  readonly decoder: Weights;
  readonly report: MappingReport;
}

export const GRANITE_CHECKPOINT: FamilyCheckpoint<Granite4VisionConfig, GraniteWeights> = {
  name: 'Granite 4 Vision',
  modelTypes: ['granite4_vision'],
  supports: { adapter: true, video: GRANITE_PROCESSOR.video },
  processor: GRANITE_PROCESSOR,
  cacheName: 'granite',
  config: (json, generation) => granite4VisionConfig(json, generation),
  weights: (ckpt, config, { adapter, allowMissing }) =>
    loadGraniteWeights(ckpt, config, config.text, {
      ...(adapter ? { overlay: loraOverlay(adapter) } : {}),
      ...(allowMissing ? { allowMissing } : {}),
    }),
  visionGraph: buildGraniteVisionEncoder,
  decoderGraph: (config, w, { loop, kvCache, quantize, passes, computeDtype, logitsToKeep }) => {
    const levels = config.levels.map((l) => l.llmLayer);
    // Built in float32; a 16-bit decoder is converted first, then the profile's passes run.
    const all = [...computeDtypePasses(computeDtype), ...passes];
    return loop === 'graph'
      ? buildGraniteDecodeLoopModel(w.decoder, config.text, { levels, quantize, passes: all })
      : buildGraniteTextDecoderModel(w.decoder, config.text, { levels, logitsToKeep, kvCache, quantize, passes: all });
  },
};
