// `vlmkit export`: the component graphs as plain ONNX files with a manifest saying how to feed them, so any
// onnxruntime binding (Python, C#, Java, C++, JS) runs the model without vlmkit. What the graphs take that is
// computed on the host (rotary tables, 3D position ids, gather indices) is described in the manifest with the
// numbers a port needs (inverse frequencies as float32, token ids, merge sizes); tools/export/run-exported.mjs
// is such a port, in plain JavaScript on onnxruntime-node, tested against `vlmkit forward`.
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import {
  buildErnieTextDecoderModel,
  buildGraniteTextDecoderModel,
  ERNIE_DECODER_IO,
  GRANITE_DECODER_IO,
  KV_CACHE_IO,
  type KvCacheDType,
  kvCacheDType,
} from '@vlmkit/moe-decoder';
import { ernieFrequencyAxes, ropeInverseFrequencies } from '@vlmkit/mrope';
import { type ComputeDType, type Graph, type QuantizeRequest, saveModel, type Value } from '@vlmkit/onnx-graph';
import { windowGeometry } from '@vlmkit/qformer';
import { Checkpoint } from '@vlmkit/safetensors';
import { ernieVisionHeadDim } from '@vlmkit/vision-tower';
import { loraOverlay, readLoraAdapter } from '@vlmkit/weight-mapper';
import { modelType, readConfigFile } from './config-file.js';
import { type ComputeDtypeOption, checkComputeDtype, type DecoderDims } from './decoder-model.js';
import { type ErnieReference, ernie45VLConfig } from './ernie/config.js';
import { buildErnieVisionEncoder, ERNIE_VISION_ENCODER_IO } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { ModelError } from './errors.js';
import { type GenerationTokens, readGenerationConfig } from './generation-tokens.js';
import { granite4VisionConfig } from './granite/config.js';
import { buildGraniteVisionEncoder, GRANITE_VISION_ENCODER_IO } from './granite/vision-encoder.js';
import { loadGraniteWeights } from './granite/weights.js';
import { sha256File } from './graph-cache.js';
import { outputDir } from './output-file.js';

export const EXPORT_FORMAT = 'vlmkit-export';
export const EXPORT_VERSION = 1;

export interface ExportOptions extends ComputeDtypeOption {
  /** A PEFT LoRA adapter merged into the exported weights (Granite). */
  adapter?: string | undefined;
  /** ERNIE: where vLLM and HF differ (position ids after a video), whose rule the manifest states (default 'vllm'). */
  reference?: ErnieReference | undefined;
  /** Initializers of at least this many bytes go to `<graph>.onnx.data` (default 1 KiB). */
  externalThreshold?: number | undefined;
  /** The decoder's weights block-quantized (com.microsoft MatMulNBits): 'int8' or 'int4' (see `ErnieLoadOptions.quantize`). */
  quantize?: QuantizeRequest | undefined;
}

/** A graph input or output: dims are numbers or symbolic names (`batch`, `seq`, `past`, `total`, ...). */
export interface ManifestTensor {
  name: string;
  dtype: string;
  dims: (number | string)[];
}

export interface ManifestGraph {
  file: string;
  /** The external data file next to it (ORT finds it by the name the graph records), or null. */
  external_data: string | null;
  sha256: Record<string, string>;
  inputs: ManifestTensor[];
  outputs: ManifestTensor[];
}

/** manifest.json, version 1. Snake case, as read from other languages. */
export interface ExportManifest {
  format: typeof EXPORT_FORMAT;
  version: number;
  model_type: string;
  source: { checkpoint: string; adapter: string | null; files: Record<string, { size: number; sha256: string }> };
  /**
   * The float type the graphs compute in (`ComputeDtypeOption.computeDtype`): weights are stored in it; graph
   * inputs, vision features and logits are float32 whatever it is; the KV cache's is `decoder.kv_cache.dtype`.
   */
  compute_dtype: ComputeDType;
  /** Run order: `vision_encoder` (when the prompt has images or videos), then `decoder` once per step. */
  graphs: { vision_encoder: ManifestGraph; decoder: ManifestGraph };
  /**
   * ORT session config entries vlmkit creates its sessions with (`SessionOptionsAppendConfigEntry`; in Node,
   * `extra`): with them, plain ORT gives vlmkit's numbers exactly (ORT's weight prepacking changes the
   * float32 summation order of MatMul, ~1e-5 relative).
   */
  session_config: Record<string, string>;
  decoder: {
    vocab_size: number;
    hidden_size: number;
    kv_cache: {
      num_layers: number;
      num_kv_heads: number;
      head_dim: number;
      /** float16 for compute_dtype float16; float32 otherwise (bfloat16 graphs: float32 holding bfloat16 values). */
      dtype: KvCacheDType;
      layout: ['batch', 'num_kv_heads', 'past', 'head_dim'];
      /** Per layer i: feed `past_key` / `past_value`, read `present_key` / `present_value`. */
      layers: { past_key: string; past_value: string; present_key: string; present_value: string }[];
      initial: string;
      update: string;
    };
    attention_mask: string;
    logits: string;
    /** Greedy / sampled decoding as `generate` does it: eos from config.json, pad for finished rows. */
    generation: { eos_token_ids: number[]; pad_token_id: number; rule: string };
  };
  /** Model-specific host-side inputs and their rules. */
  ernie?: Record<string, unknown>;
  granite?: Record<string, unknown>;
}

export interface ExportResult {
  manifest: ExportManifest;
  manifestPath: string;
  /** Every file written, relative to the output directory. */
  files: string[];
}

function tensors(values: readonly Value[]): ManifestTensor[] {
  return values.map((v) => ({ name: v.name, dtype: v.dtype, dims: [...v.shape] }));
}

async function writeGraph(g: Graph, out: string, stem: string, threshold: number | undefined): Promise<ManifestGraph> {
  const file = `${stem}.onnx`;
  const saved = await saveModel(g, join(out, file), {
    linkFiles: false,
    ...(threshold !== undefined ? { externalThreshold: threshold } : {}),
  });
  const data = saved.dataPath !== undefined ? basename(saved.dataPath) : null;
  const sha256: Record<string, string> = { [file]: await sha256File(join(out, file)) };
  if (data) sha256[data] = await sha256File(join(out, data));
  const snap = g.snapshot();
  return { file, external_data: data, sha256, inputs: tensors(snap.inputs), outputs: tensors(snap.outputs) };
}

function kvLayers(n: number): ExportManifest['decoder']['kv_cache']['layers'] {
  return Array.from({ length: n }, (_, i) => ({
    past_key: KV_CACHE_IO.past(i, 'key'),
    past_value: KV_CACHE_IO.past(i, 'value'),
    present_key: KV_CACHE_IO.present(i, 'key'),
    present_value: KV_CACHE_IO.present(i, 'value'),
  }));
}

const KV_INITIAL = 'prefill: every past_key_values.{i}.key / .value is a zero-size float32 tensor [B, num_kv_heads, 0, head_dim] (P = 0)';
const KV_UPDATE =
  'after each run, feed present.{i}.key / .value ([B, num_kv_heads, P + S, head_dim]) as past_key_values.{i}.key / .value of the next run';
const ATTENTION_MASK =
  'int64 [B, P + S]: 1 for real tokens, 0 for padding, covering the cached tokens and this step; each decode step appends one column of 1s';

function f32List(a: Float32Array): number[] {
  return Array.from(a);
}

/**
 * Writes the model's component graphs to `outDir` (vision_encoder.onnx, decoder.onnx, each with its
 * .onnx.data when it has large initializers; the weights are copied, so the folder stands alone) and
 * manifest.json describing how to run them.
 */
export async function exportModel(modelDir: string, outDir: string, options: ExportOptions = {}): Promise<ExportResult> {
  const root = resolve(modelDir);
  const configFile = await readConfigFile(root);
  // Refused before anything is built: an output directory inside (or holding) the checkpoint or the adapter, a
  // file there that is a link, a special file or one of theirs. The files are written to a staging directory
  // inside it and renamed into place.
  const target = await outputDir(outDir, [root, options.adapter], EXPORT_FILES);
  const manifest = await target.write(async (stage) => {
    const m = await exportInto(root, configFile, stage, options);
    return { result: m, files: [...graphFiles(m), 'manifest.json'] };
  });
  const out = resolve(outDir);
  const written = graphFiles(manifest);
  // An earlier export into the same folder may have left a data file this one no longer has.
  for (const stem of ['vision_encoder', 'decoder']) {
    if (!written.includes(`${stem}.onnx.data`)) await rm(join(out, `${stem}.onnx.data`), { force: true });
  }
  return { manifest, manifestPath: join(out, 'manifest.json'), files: [...written, 'manifest.json'] };
}

/** Every file an export may write (the data files only when a graph has large initializers). */
const EXPORT_FILES = ['vision_encoder.onnx', 'vision_encoder.onnx.data', 'decoder.onnx', 'decoder.onnx.data', 'manifest.json'];

function graphFiles(manifest: ExportManifest): string[] {
  return [manifest.graphs.vision_encoder, manifest.graphs.decoder].flatMap((g) => (g.external_data ? [g.file, g.external_data] : [g.file]));
}

/** Writes the graphs and manifest.json into `out`; returns the manifest. */
async function exportInto(
  root: string,
  configFile: Awaited<ReturnType<typeof readConfigFile>>,
  out: string,
  options: ExportOptions,
): Promise<ExportManifest> {
  const { json } = configFile;
  const type = modelType(configFile);
  const ckpt = await Checkpoint.open(root);
  const files: ExportManifest['source']['files'] = {};
  for (const f of (await readdir(root)).filter((n) => n.endsWith('.safetensors')).sort()) {
    files[f] = { size: (await stat(join(root, f))).size, sha256: await sha256File(join(root, f)) };
  }
  const t = options.externalThreshold;
  const computeDtype = checkComputeDtype(options);
  let manifest: ExportManifest;
  try {
    if (type === 'ernie4_5_vl_moe') {
      if (options.adapter) throw new ModelError('BAD_INPUT', 'LoRA adapters are supported for Granite 4 Vision only');
      const config = ernie45VLConfig(json, options.reference ?? 'vllm', await readGenerationConfig(root));
      const mapped = await loadErnieWeights(ckpt, config);
      const vision = await writeGraph(
        buildErnieVisionEncoder(mapped.vision, mapped.resampler, config, { computeDtype }),
        out,
        'vision_encoder',
        t,
      );
      const decoder = await writeGraph(
        buildErnieTextDecoderModel(mapped.decoder, config.text, { quantize: options.quantize, computeDtype }),
        out,
        'decoder',
        t,
      );
      const text = config.text;
      const v = config.vision;
      const r = config.resampler;
      manifest = {
        ...head('ernie4_5_vl_moe', root, null, files, vision, decoder, computeDtype),
        decoder: decoderSection(text, config.tokens, computeDtype),
        ernie: {
          tokens: {
            image: config.tokens.image,
            video: config.tokens.video,
            image_start: config.tokens.imageStart ?? null,
            image_end: config.tokens.imageEnd ?? null,
            video_start: config.tokens.videoStart ?? null,
            video_end: config.tokens.videoEnd ?? null,
          },
          spatial_merge_size: r.spatialMergeSize,
          temporal_merge_size: r.temporalMergeSize,
          temporal_slicing: r.useTemporalConv,
          vision_encoder_inputs: {
            [ERNIE_VISION_ENCODER_IO.pixelValues]:
              'float32 [num_patches, C*p*p]: the processor pixel_values (images, then separately videos: one encoder run each)',
            [ERNIE_VISION_ENCODER_IO.segmentIds]:
              'int32 [num_patches]: index of the frame each patch belongs to (every frame of every grid in order: 0, 1, 2, ...)',
            [`${ERNIE_VISION_ENCODER_IO.rotaryCos} / ${ERNIE_VISION_ENCODER_IO.rotarySin}`]:
              'float32 [num_patches, head_dim/2]: per patch (h, w) = its row and column in the grid, patches taken in spatial-merge windows (for each frame, for each window row bh, window column bw, ih < m, iw < m: h = bh*m + ih, w = bw*m + iw); column a*head_dim/4 + i is cos/sin(float32(pos_a * vision_rotary.inv_freq[i])), a = 0 for h, 1 for w',
            [`${ERNIE_VISION_ENCODER_IO.firstSlice} / ${ERNIE_VISION_ENCODER_IO.secondSlice}`]:
              'int64 [num_tokens]: for each grid at merged-token offset o with n = h*w/m^2 tokens per frame, pair frames (0,1), (2,3), ... (an image pairs frame 0 with itself) and list o + even*n + j (first) and o + odd*n + j (second), j < n',
          },
          vision_rotary: {
            head_dim: ernieVisionHeadDim(v),
            theta: v.ropeTheta,
            inv_freq: f32List(ropeInverseFrequencies(ernieVisionHeadDim(v) / 2, v.ropeTheta)),
          },
          decoder_inputs: {
            [ERNIE_DECODER_IO.visionEmbeds]:
              'float32 [N, hidden]: the vision encoder `embeds` of the images then of the videos, concatenated; [0, hidden] in decode steps',
            [ERNIE_DECODER_IO.visionPositions]:
              'int64 [N]: flattened b*S + s of the image placeholder tokens then of the video placeholder tokens (row-major), [0] in decode steps',
            [ERNIE_DECODER_IO.moeTokenType]:
              'int64 [B, S]: HF moe_mm_token_type_ids (1 for image/video placeholders and their start/end tokens, else 0); 0 in decode steps',
            [`${ERNIE_DECODER_IO.ropeCos} / ${ERNIE_DECODER_IO.ropeSin}`]:
              'float32 [B, S, head_dim/2]: cos/sin(float32(position_ids[text_rotary.axes[i], b, s] * text_rotary.inv_freq[i])) from the 3D position ids',
          },
          position_ids: {
            dims: [3, 'batch', 'seq'],
            rule: `get_rope_index over the unmasked tokens of each row: text tokens get cur on t, h and w, then cur += 1; a run of an image's t*h'*w' placeholders (h' = h/m, w' = w/m; a video: t' = t/temporal_merge_size) gets (cur + frame, cur + y, cur + x), then cur = ${config.reference === 'vllm' ? 'max over the item + 1 (vLLM)' : "cur + max(h', w') (HF 5.17)"}; padding gets 0; rope_delta = (max position + 1) - real tokens`,
            advance: config.reference,
            decode:
              'each generated token: position real_tokens_so_far + rope_delta on all three axes (real_tokens_so_far: ones in the attention mask before this token); vision_embeds [0, hidden], vision_positions [0], moe_token_type 0',
          },
          text_rotary: {
            head_dim: text.headDim,
            theta: text.ropeTheta,
            freq_allocation: text.freqAllocation,
            inv_freq: f32List(ropeInverseFrequencies(text.headDim, text.ropeTheta)),
            axes: Array.from(ernieFrequencyAxes(text.headDim, text.freqAllocation)),
          },
        },
      };
    } else {
      const config = granite4VisionConfig(json, await readGenerationConfig(root));
      const adapter = options.adapter ? await readLoraAdapter(resolve(options.adapter), ckpt) : undefined;
      const mapped = await loadGraniteWeights(ckpt, config, config.text, adapter ? { overlay: loraOverlay(adapter) } : {});
      const vision = await writeGraph(
        buildGraniteVisionEncoder(mapped.vision, mapped.projectors, config, { computeDtype }),
        out,
        'vision_encoder',
        t,
      );
      const levels = config.levels.map((l) => l.llmLayer);
      const decoder = await writeGraph(
        buildGraniteTextDecoderModel(mapped.decoder, config.text, { levels, quantize: options.quantize, computeDtype }),
        out,
        'decoder',
        t,
      );
      const text = config.text;
      manifest = {
        ...head('granite4_vision', root, adapter ? resolve(options.adapter!) : null, files, vision, decoder, computeDtype),
        decoder: decoderSection(text, config.tokens, computeDtype),
        granite: {
          image_token_id: config.tokens.image,
          image_size: config.vision.imageSize,
          image_grid_pinpoints: config.pinpoints,
          tokens_per_tile_side: windowGeometry(config.projector).downsampledSide,
          image_newline: config.imageNewline,
          deepstack: config.levels.map((l) => ({
            output: GRANITE_VISION_ENCODER_IO.deepstack(l.k),
            decoder_input: GRANITE_DECODER_IO.deepstack(l.k),
            llm_layer: l.llmLayer,
          })),
          vision_encoder_inputs: {
            [GRANITE_VISION_ENCODER_IO.pixelValues]:
              'float32 [tiles, C, S, S]: the real tiles of every image in order (base tile first): of processor pixel_values [images, max_tiles, C, S, S], image i keeps its first rows*cols + 1 tiles, rows x cols = best fit of image_sizes[i] among image_grid_pinpoints (LLaVA-NeXT select_best_resolution) / image_size',
            [GRANITE_VISION_ENCODER_IO.packIndices]:
              'int64 [image_tokens]: gather rows of [all tiles x side^2 tokens, then image_newline at index tiles*side^2]: per image its base tile tokens, then if it has more tiles the (rows*side) x (cols*side) grid unpadded to the image aspect (HF unpad_image: round to 7 digits, equal margins) row by row, each grid row followed by image_newline; a single-tile image gets one image_newline',
          },
          decoder_inputs: {
            [GRANITE_DECODER_IO.imagePositions]:
              'int64 [N]: flattened b*S + s of the image_token_id tokens (row-major); [0] in decode steps',
            deepstack_k: 'float32 [N, hidden]: the vision encoder output of the same name; [0, hidden] in decode steps',
            [GRANITE_DECODER_IO.positionIds]:
              'int64 [B, S]: cumsum(attention_mask) - 1, and 1 where attention_mask is 0 (HF generate); decode: real tokens so far',
          },
        },
      };
    }
  } catch (e) {
    await ckpt.close();
    throw e;
  }
  await ckpt.close();
  await writeFile(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

function head(
  modelType: string,
  checkpoint: string,
  adapter: string | null,
  files: ExportManifest['source']['files'],
  vision: ManifestGraph,
  decoder: ManifestGraph,
  computeDtype: ComputeDType,
): Pick<ExportManifest, 'format' | 'version' | 'model_type' | 'source' | 'compute_dtype' | 'graphs' | 'session_config'> {
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    model_type: modelType,
    source: { checkpoint, adapter, files },
    compute_dtype: computeDtype,
    graphs: { vision_encoder: vision, decoder },
    session_config: { 'session.disable_prepacking': '1' },
  };
}

function decoderSection(
  text: DecoderDims & { hiddenSize: number },
  tokens: GenerationTokens,
  computeDtype: ComputeDType,
): ExportManifest['decoder'] {
  const layers = text.numHiddenLayers;
  return {
    vocab_size: text.vocabSize,
    hidden_size: text.hiddenSize,
    kv_cache: {
      num_layers: layers,
      num_kv_heads: text.numKeyValueHeads,
      head_dim: text.headDim,
      dtype: kvCacheDType(computeDtype),
      layout: ['batch', 'num_kv_heads', 'past', 'head_dim'],
      layers: kvLayers(layers),
      initial: KV_INITIAL,
      update: KV_UPDATE,
    },
    attention_mask: ATTENTION_MASK,
    logits: 'float32 [B, S, vocab]: output `logits`; the next token comes from the last position of each row',
    generation: {
      eos_token_ids: [...tokens.eos],
      pad_token_id: tokens.pad,
      rule: 'one token per row per step (greedy: the first index of the largest logit); a row that emitted one of eos_token_ids emits pad_token_id afterwards; stop when every row is done or after max_new_tokens',
    },
  };
}
