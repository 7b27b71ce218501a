// A model family (ERNIE-4.5-VL, Granite 4 Vision) is one spec: everything particular to it. The registry,
// export, inspect, the parameter docs and the CLI loop over the registered specs (./families.ts) and never
// name a model type. A family's folder holds its spec (family.ts), its model class and its parts.

import type { Graph } from '@vlmkit/onnx-graph';
import type { ProcessorFamily } from '@vlmkit/processors';
import type { Checkpoint, ModelFiles } from '@vlmkit/safetensors';
import { type LoraAdapter, type MappingReport, type MappingTable, type ParamSpec, readLoraAdapter } from '@vlmkit/weight-mapper';
import { readAdapter, resolveDir } from '#platform';
import { readConfigFile } from './config-file.js';
import type { DecoderDims } from './decoder-model.js';
import { ModelError } from './errors.js';
import { type GenerationTokens, readGenerationConfig } from './generation-tokens.js';
import { maxPositionEmbeddings } from './inputs-check.js';
import { type DecoderBuild, type LoadedSessions, type LoadOptions, loadSessions, type VisionBuild } from './model-load.js';
import { type CheckpointSource, sourceName } from './model-source.js';
import type { ModelOrigin, PretrainedModel } from './pretrained-model.js';

/** What shared code reads of every family's typed config: the decoder's sizes and the generation tokens. */
export interface FamilyConfig {
  readonly text: DecoderDims & { readonly hiddenSize: number };
  readonly tokens: GenerationTokens;
}

/** What shared code reads of every family's mapped weights: the mapping's report (inspect). */
export interface FamilyWeights {
  readonly report: MappingReport;
}

/** The options a family's config normalizer takes (load options read by the config). */
export type ConfigOptions = Pick<LoadOptions, 'reference'>;

export interface WeightOptions {
  adapter?: LoraAdapter | undefined;
  /** Report missing parameters instead of throwing (inspect). */
  allowMissing?: boolean | undefined;
  decoder?: DecoderBuild | undefined;
}

/** How the decoder graph is built: a load's resolved options, and whether it takes `logits_to_keep` (export's does not). */
export interface DecoderGraphBuild extends DecoderBuild {
  logitsToKeep: boolean;
}

/**
 * What a family's checkpoint is and how it becomes its two graphs: what a load, export and inspect share (and
 * what the family's model class loads with, so it lives apart from the spec that names the class).
 */
export interface FamilyCheckpoint<Config extends FamilyConfig, Weights extends FamilyWeights> {
  /** The name in messages and docs ('Granite 4 Vision'). */
  readonly name: string;
  /** The config.json model_type values it answers; the first is HF's, the model's `modelType` and the export manifest's. */
  readonly modelTypes: readonly [string, ...string[]];
  readonly supports: {
    /** LoRA adapters merged into the decoder at load (and export, and checked by inspect). */
    readonly adapter: boolean;
    /** Videos as input (its processor's `video`). */
    readonly video: boolean;
  };
  /** The processor's rules (@vlmkit/processors): the model's `processor()` uses them. */
  readonly processor: ProcessorFamily;
  /** Graph-cache entries are `${cacheName}-vision` and `${cacheName}-decoder` (`-decode-loop` for loop 'graph'). */
  readonly cacheName: string;
  /** The config normalizer: config.json (and generation_config.json) read once into the family's typed config. */
  config(json: Record<string, unknown>, generation: unknown, options: ConfigOptions): Config;
  /**
   * The checkpoint mapped onto the components' parameters (lazy: nothing read yet), a LoRA adapter merged;
   * `decoder`: how the decoder that reads them is built (its experts' layout), the default one when absent.
   */
  weights(ckpt: Checkpoint, config: Config, options: WeightOptions): Promise<Weights>;
  visionGraph(config: Config, weights: Weights, build: VisionBuild): Graph;
  decoderGraph(config: Config, weights: Weights, build: DecoderGraphBuild): Graph;
}

/** The family's part of docs/parameter-names.md: a title, its mapping table's renames, then headings, prose and parameter tables. */
export interface ParameterDocs {
  readonly title: string;
  readonly table: MappingTable;
  readonly blocks: readonly (string | readonly ParamSpec[])[];
}

/**
 * One model family. Shared code holds a family as `ModelFamily` (its config and weights `unknown` to it) and
 * passes only what the same family returned back into it.
 */
export interface ModelFamily<
  Config extends FamilyConfig = FamilyConfig,
  Weights extends FamilyWeights = FamilyWeights,
  Model extends PretrainedModel = PretrainedModel,
> extends FamilyCheckpoint<Config, Weights> {
  /** The HF forward kwargs the model reads, by name (`forwardNamed`, `generate`; others are refused). */
  readonly inputNames: readonly string[];
  /** The names `forwardNamed` writes its outputs under (a function for an indexed family of outputs). */
  readonly forwardOutputs: Readonly<Record<string, string | ((k: number) => string)>>;
  /** The export manifest's host-side rules: under `key`, what a port computes on the host and how. */
  readonly manifest: { readonly key: string; rules(config: Config): Record<string, unknown> };
  /** Its section of docs/parameter-names.md, for its published config. */
  parameterDocs(): ParameterDocs;
  /** Loads a checkpoint (its directory's path, or its files: `ModelFiles`) as the family's model. */
  load(source: CheckpointSource, options?: LoadOptions): Promise<Model>;
}

/** Refuses an adapter for a family that takes none: the one message, from `supports.adapter`. */
export function checkAdapter(
  family: Pick<FamilyCheckpoint<FamilyConfig, FamilyWeights>, 'name' | 'supports'>,
  adapter: CheckpointSource | undefined,
): void {
  if (adapter !== undefined && adapter !== '' && !family.supports.adapter) {
    throw new ModelError('BAD_INPUT', `LoRA adapters are not supported for ${family.name}: drop the adapter (${sourceName(adapter)}).`);
  }
}

/** A family's load: config read once, the adapter checked, the vision and decoder sessions found or built. */
export interface FamilyLoad<Config> {
  config: Config;
  loaded: LoadedSessions;
  origin: ModelOrigin;
}

/**
 * What every family's `load` runs before it makes its model: config.json read once through the family's
 * normalizer, the adapter checked and merged, then `loadSessions` with the family's weights and graphs.
 */
export async function loadFamily<Config extends FamilyConfig, Weights extends FamilyWeights>(
  family: FamilyCheckpoint<Config, Weights>,
  dir: CheckpointSource,
  options: LoadOptions,
): Promise<FamilyLoad<Config>> {
  const startedAt = performance.now();
  checkAdapter(family, options.adapter);
  const adapter = options.adapter === '' ? undefined : options.adapter;
  // A directory's graph cache keys the adapter by its files' paths: it takes an adapter directory's path.
  if (typeof dir === 'string' && adapter !== undefined && typeof adapter !== 'string') {
    throw new ModelError(
      'BAD_LOAD_OPTIONS',
      `the LoRA adapter ${adapter.root} is given as files, the checkpoint ${dir} as a directory: pass the adapter's directory path, or load the checkpoint from its files too.`,
    );
  }
  const root = typeof dir === 'string' ? resolveDir(dir) : dir;
  const { json } = await readConfigFile(root);
  const config = family.config(json, await readGenerationConfig(root), options);
  const origin = { dir, modelType: family.modelTypes[0], processor: family.processor, maxPositions: maxPositionEmbeddings(json) };
  const loaded = await loadSessions({
    name: family.cacheName,
    root,
    options,
    startedAt,
    weights: async (ckpt, decoder) => {
      const read: AdapterRead | undefined =
        adapter === undefined
          ? undefined
          : typeof adapter === 'string'
            ? await readAdapter(adapter, ckpt)
            : await adapterFiles(adapter, ckpt);
      return {
        weights: await family.weights(ckpt, config, { adapter: read?.adapter, decoder }),
        adapterFiles: read?.files ?? [],
        adapterVersion: read?.version,
      };
    },
    visionGraph: (m, build) => family.visionGraph(config, m.weights, build),
    decoderGraph: (m, build) => family.decoderGraph(config, m.weights, { ...build, logitsToKeep: true }),
    // The adapter's files are part of what the decoder's cache entry was built from (by path, or by stamp).
    extraFiles: ({ adapterFiles }) => adapterFiles,
    extraVersion: ({ adapterVersion }) => adapterVersion,
  });
  return { config, loaded, origin };
}

const ADAPTER_FILES = ['adapter_model.safetensors', 'adapter_config.json'] as const;

/** A LoRA adapter read at load: its files by path (the disk cache's key), or by name and stamp (the page cache's). */
interface AdapterRead {
  adapter: LoraAdapter;
  files: string[];
  version?: { files: string[]; stamps: string[] } | undefined;
}

/** A LoRA adapter read through its files, with their names and stamps (what the page cache keys the decoder by). */
async function adapterFiles(files: ModelFiles, ckpt: Checkpoint): Promise<AdapterRead> {
  const adapter = await readLoraAdapter(files, ckpt);
  const stamps: string[] = [];
  for (const name of ADAPTER_FILES) {
    const source = await files.open(name);
    stamps.push(source?.stamp ?? 'absent');
    await source?.close();
  }
  return { adapter, files: [], version: { files: ADAPTER_FILES.map((n) => `adapter:${files.root}/${n}`), stamps } };
}
