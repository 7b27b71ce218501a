// A custom pipeline: ERNIE-4.5-VL's vision tower and resampler in one graph of your own, feeding the MoE
// decoder built separately, each component from its own package; @vlmkit/models does the same for you.
//   node examples/dist/custom-pipeline.js [MODEL_DIR] [IMAGE] [QUESTION]
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildErnieTextDecoderModel,
  DECODER_OUTPUTS,
  ERNIE_DECODER_INPUTS,
  ernieRotaryTables,
  ernieTextConfigFromHf,
  ernieTextExpectedParameters,
  KV_CACHE_IO,
} from '@vlmkit/moe-decoder';
import { ernieRopeIndex } from '@vlmkit/mrope';
import { Graph, serializeModel } from '@vlmkit/onnx-graph';
import { Processor } from '@vlmkit/processors';
import { buildErnieResampler, expectedParameters, fromHfConfig as resamplerConfigFromHf, resamplerInputs } from '@vlmkit/resampler';
import { createSession, float32, type HostTensor, hostTensor, int64, KvCache } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import {
  buildErnieVisionTower,
  ErnieVisionConfig,
  ernieVisionHeadDim,
  ernieVisionInputs,
  expectedErnieVisionParameters,
} from '@vlmkit/vision-tower';
import { mapErnie45VL } from '@vlmkit/weight-mapper';

const dir = process.argv[2] ?? 'test-fixtures/ernie-tiny';
const image = process.argv[3] ?? 'test-fixtures/processors/images/photo.jpg';
const question = process.argv[4] ?? 'What is in the picture?';

// Configs, each component reading its part of config.json, and the checkpoint mapped onto their parameters.
const json = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
const vision = ErnieVisionConfig.fromHfConfig(json);
const resampler = resamplerConfigFromHf(json);
const text = ernieTextConfigFromHf(json);
const ckpt = await Checkpoint.open(dir);
const weights = await mapErnie45VL(ckpt, {
  vision: { parameters: expectedErnieVisionParameters(vision) },
  resampler: { parameters: expectedParameters(resampler) },
  decoder: { parameters: ernieTextExpectedParameters(text), config: text },
});

// The vision encoder: tower then resampler in one graph; inputs and outputs named as you like.
const g = new Graph({ name: 'my_vision_encoder' });
const patchDim = vision.inChannels * vision.patchSize ** 2;
const half = ernieVisionHeadDim(vision) / 2;
const towerIn = {
  pixelValues: g.input('pixel_values', 'float32', ['patches', patchDim]),
  rotaryCos: g.input('rotary_cos', 'float32', ['patches', half]),
  rotarySin: g.input('rotary_sin', 'float32', ['patches', half]),
  segmentIds: g.input('segment_ids', 'int32', ['patches']),
};
const { hidden } = buildErnieVisionTower(g, weights.vision, vision, towerIn);
const firstSlice = g.input('first_slice', 'int64', ['tokens']);
const secondSlice = g.input('second_slice', 'int64', ['tokens']);
g.output(buildErnieResampler(g, weights.resampler, resampler, { visionHidden: hidden, firstSlice, secondSlice }).embeds, 'image_embeds');

// The decoder, built separately: its own graph with a KV cache interface (empty here: one full forward).
const session = async (graph: Graph) => {
  const { bytes, externalData } = await serializeModel(graph);
  return createSession(bytes, { externalData });
};
const visionSession = await session(g);
const decoderSession = await session(buildErnieTextDecoderModel(weights.decoder, text));
await ckpt.close();

// Model inputs from an image and a question, as HF's processor makes them.
const processor = await Processor.fromPretrained(dir);
const messages = [
  {
    role: 'user',
    content: [
      { type: 'image', path: image },
      { type: 'text', text: question },
    ],
  },
];
const inputs = await processor.processChat(messages, { addGenerationPrompt: true });
const grids = Array.from({ length: inputs.image_grid_thw!.dims[0]! }, (_, i) => {
  const [t, h, w] = Array.from(inputs.image_grid_thw!.data.subarray(3 * i, 3 * i + 3), Number);
  return [t!, h!, w!] as [number, number, number];
});

// Vision: per-patch rotary tables and frame ids, the resampler's temporal slices, one run.
const v = ernieVisionInputs(grids, vision);
const r = resamplerInputs(grids, resampler);
const { image_embeds } = await visionSession.run({
  pixel_values: float32(inputs.pixel_values!.data, [...inputs.pixel_values!.dims]),
  rotary_cos: float32(v.rotaryCos, v.rotaryShape),
  rotary_sin: float32(v.rotarySin, v.rotaryShape),
  segment_ids: hostTensor('int32', v.segmentIds, [v.numPatches]),
  first_slice: int64(r.firstSlice, [r.numTokens]),
  second_slice: int64(r.secondSlice, [r.numTokens]),
});

// Decoder inputs: the image rows go to the placeholder positions; 3D M-RoPE positions from the grids.
const S = inputs.input_ids.dims[1]!;
const mmTypes = inputs.mm_token_type_ids!.data;
const placeholders = Array.from(mmTypes.keys()).filter((i) => mmTypes[i] === 1n);
const pos = ernieRopeIndex(
  { inputIds: inputs.input_ids.data, imageGridThw: grids, mmTokenTypeIds: mmTypes },
  {
    imageTokenId: json.image_token_id as number,
    spatialMergeSize: resampler.spatialMergeSize,
    temporalMergeSize: resampler.temporalMergeSize,
  },
  { dtype: 'int64' },
);
const rope = ernieRotaryTables(pos.positionIds as BigInt64Array, [3, 1, S], text);
const cache = new KvCache({
  numLayers: text.numHiddenLayers,
  numKvHeads: text.numKeyValueHeads,
  headDim: text.headDim,
  names: KV_CACHE_IO,
});
const out = await decoderSession.run(
  ERNIE_DECODER_INPUTS.feeds<HostTensor>({
    input_ids: int64(inputs.input_ids.data, [1, S]),
    vision_embeds: image_embeds!,
    vision_positions: int64(placeholders, [placeholders.length]),
    moe_token_type: int64(inputs.moe_mm_token_type_ids!.data, [1, S]),
    attention_mask: int64(inputs.attention_mask.data, [1, S]),
    rope_cos: float32(rope.cos, rope.shape),
    rope_sin: float32(rope.sin, rope.shape),
    past_key_values: cache.layers(),
  }),
  { outputs: [DECODER_OUTPUTS.names.logits] },
);
const logits = out[DECODER_OUTPUTS.names.logits]!;
const V = logits.dims[2]!;
const last = Array.from((logits.data as Float32Array).subarray((S - 1) * V, S * V));
const top = [...last.keys()].sort((a, b) => last[b]! - last[a]!).slice(0, 5);

console.log(`prompt: ${S} tokens, ${placeholders.length} image placeholders, grid_thw [${grids[0]!.join(', ')}]`);
console.log(`image_embeds [${image_embeds!.dims.join(', ')}], logits [${logits.dims.join(', ')}] on ${decoderSession.device}`);
console.log(`last position top 5: ${top.map((id) => `${id} (${last[id]!.toFixed(5)})`).join(', ')}`);
console.log(`next token: ${JSON.stringify(await processor.decode([top[0]!]))}`);
await visionSession.release();
await decoderSession.release();
