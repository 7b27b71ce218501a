// `vlmkit export`: the component graphs as plain ONNX files with a manifest saying how to feed them, so any
// onnxruntime binding (Python, C#, Java, C++, JS) runs the model without vlmkit. What the graphs take that is
// computed on the host (rotary tables, 3D position ids, gather indices) is described in the manifest with the
// numbers a port needs (inverse frequencies as float32, token ids, merge sizes); tools/export/run-exported.mjs
// is such a port, in plain JavaScript on onnxruntime-node, tested against `vlmkit forward`.
import { rm, stat, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { KV_CACHE_IO, kvCacheDType } from '@vlmkit/moe-decoder';
import { type ComputeDType, declaredTensors, type Graph, type QuantizeRequest, saveModel, type Value } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { readLoraAdapter } from '@vlmkit/weight-mapper';
import { sha256File } from './cache-files.node.js';
import { readConfigFile } from './config-file.js';
import { checkComputeDtype } from './decoder-model.js';
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportManifest,
  type ExportOptions,
  type ExportResult,
  type ManifestGraph,
  type ManifestTensor,
} from './export-manifest.js';
import { familyOf } from './families.js';
import { checkAdapter, type DecoderGraphBuild, type FamilyConfig } from './family.js';
import { readGenerationConfig } from './generation-tokens.js';
import { outputDir } from './output-file.node.js';

function tensors(values: readonly Value[]): ManifestTensor[] {
  return values.map((v) => ({ name: v.name, dtype: v.dtype, dims: [...v.shape] }));
}

async function writeGraph(g: Graph, out: string, stem: string, threshold: number | undefined): Promise<ManifestGraph> {
  const file = `${stem}.onnx`;
  const saved = await saveModel(g, join(out, file), threshold !== undefined ? { externalThreshold: threshold } : {});
  const data = saved.dataPath !== undefined ? basename(saved.dataPath) : null;
  const sha256: Record<string, string> = { [file]: await sha256File(join(out, file)) };
  if (data) sha256[data] = await sha256File(join(out, data));
  // The inputs as the graph's contracts declared them (the schemas of `*_INPUTS`), the outputs as built.
  const inputs = declaredTensors(g).map((t) => ({ name: t.name, dtype: t.dtype, dims: [...t.dims] }));
  return { file, external_data: data, sha256, inputs, outputs: tensors(g.snapshot().outputs) };
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
  const family = familyOf(configFile);
  const ckpt = await Checkpoint.open(root);
  const files: ExportManifest['source']['files'] = {};
  for (const path of ckpt.files()) files[relative(root, path)] = { size: (await stat(path)).size, sha256: await sha256File(path) };
  const t = options.externalThreshold;
  const computeDtype = checkComputeDtype(options);
  let manifest: ExportManifest;
  try {
    checkAdapter(family, options.adapter);
    const config = family.config(configFile.json, await readGenerationConfig(root), options);
    const adapter = options.adapter ? await readLoraAdapter(resolve(options.adapter), ckpt) : undefined;
    const build = portableDecoder(computeDtype, options.quantize);
    const weights = await family.weights(ckpt, config, { adapter, decoder: build });
    const vision = await writeGraph(
      family.visionGraph(config, weights, { computeDtype, quantize: undefined, passes: [] }),
      out,
      'vision_encoder',
      t,
    );
    const decoder = await writeGraph(family.decoderGraph(config, weights, build), out, 'decoder', t);
    manifest = {
      ...head(family.modelTypes[0], root, adapter ? resolve(options.adapter!) : null, files, vision, decoder, computeDtype),
      decoder: decoderSection(config, computeDtype),
      [family.manifest.key]: family.manifest.rules(config),
    };
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

/**
 * The decoder export writes: one step graph any binding can run, so the HF / optimum layout (each step returns
 * past + new), standard ONNX ops (no passes), experts as stored, and no `logits_to_keep` input.
 */
function portableDecoder(computeDtype: ComputeDType, quantize: QuantizeRequest | undefined): DecoderGraphBuild {
  return {
    loop: 'host',
    kvCache: 'concat',
    passes: [],
    emptyModalityIf: true,
    quantize,
    computeDtype,
    logitsToKeep: false,
  };
}

function decoderSection({ text, tokens }: FamilyConfig, computeDtype: ComputeDType): ExportManifest['decoder'] {
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
