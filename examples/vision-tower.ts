// A component alone: the ERNIE-4.5-VL vision tower on an image file.
//   node examples/dist/vision-tower.js [MODEL_DIR] [IMAGE]
// image file -> ERNIE image processor -> pixel_values -> vision tower graph (weights mapped from the checkpoint)
// -> onnxruntime-node -> one hidden vector per patch.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ernieTextConfigFromHf } from '@vlmkit/moe-decoder';
import { serializeModel } from '@vlmkit/onnx-graph';
import { decodeImage, ernieImageProcessorConfig, processErnieImages } from '@vlmkit/processors';
import { Checkpoint } from '@vlmkit/safetensors';
import {
  buildErnieVisionTowerModel,
  ERNIE_VISION_TOWER_INPUTS,
  ERNIE_VISION_TOWER_OUTPUTS,
  ErnieVisionConfig,
  ernieVisionInputs,
  expectedErnieVisionParameters,
} from '@vlmkit/vision-tower';
import { mapErnie45VL } from '@vlmkit/weight-mapper';
import ort from 'onnxruntime-node';

const dir = process.argv[2] ?? 'test-fixtures/ernie-tiny';
const imagePath = process.argv[3] ?? 'test-fixtures/processors/images/photo.jpg';
const readJson = async (name: string) => JSON.parse(await readFile(join(dir, name), 'utf8')) as Record<string, unknown>;

// 1. Pixels, exactly as HF's ERNIE image processor makes them: [patches, 3*14*14] and the grid (t, h, w).
const images = processErnieImages([await decodeImage(imagePath)], ernieImageProcessorConfig(await readJson('preprocessor_config.json')));
const grids = images.imageGridThw.map(([t, h, w]) => [t, h, w] as [number, number, number]);

// 2. The tower's weights under its own names (blocks.0.attn.qkv.weight ...), mapped from the checkpoint's
//    (vision_model.* / model.vision_model.*): nothing is read yet, tensors are references into the file.
const json = await readJson('config.json');
const config = ErnieVisionConfig.fromHfConfig(json);
const ckpt = await Checkpoint.open(dir);
const { vision } = await mapErnie45VL(ckpt, {
  vision: { parameters: expectedErnieVisionParameters(config) },
  resampler: { parameters: [] },
  decoder: { parameters: [], config: ernieTextConfigFromHf(json) },
});

// 3. The tower as a standalone ONNX model, run by onnxruntime-node.
const { bytes, externalData } = await serializeModel(buildErnieVisionTowerModel(vision, config));
const session = await ort.InferenceSession.create(bytes, { externalData });
await ckpt.close();

// 4. Per-patch 2D rotary tables and frame ids from the grid, then one run.
const x = ernieVisionInputs(grids, config);
const feeds = ERNIE_VISION_TOWER_INPUTS.feeds<ort.Tensor>({
  pixel_values: new ort.Tensor('float32', images.pixelValues, [...images.pixelValuesShape]),
  rotary_cos: new ort.Tensor('float32', x.rotaryCos, x.rotaryShape),
  rotary_sin: new ort.Tensor('float32', x.rotarySin, x.rotaryShape),
  segment_ids: new ort.Tensor('int32', x.segmentIds, [x.numPatches]),
});
const hidden = (await session.run(feeds))[ERNIE_VISION_TOWER_OUTPUTS.names.vision_hidden]!;
const values = hidden.data as Float32Array;

console.log(`image ${imagePath}: grid_thw [${grids[0]!.join(', ')}], pixel_values [${images.pixelValuesShape.join(', ')}]`);
console.log(`vision_hidden [${hidden.dims.join(', ')}]`);
console.log(`patch 0: ${Array.from(values.subarray(0, 6), (v) => v.toFixed(6)).join(' ')}`);
console.log(`mean |x|: ${(values.reduce((a, v) => a + Math.abs(v), 0) / values.length).toFixed(6)}`);
await session.release();
