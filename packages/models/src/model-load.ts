// How both assembled models load: the load options (the user's choices; the rest is the profile's,
// ./profiles.ts), and the steps every load takes (weights mapped from the checkpoint, the vision encoder's
// session, the decoder's, from the graph cache or built into it), each model saying only how its weights map
// and how its two graphs are built.

import type { KvCacheMode } from '@vlmkit/moe-decoder';
import {
  type ComputeDType,
  deferPasses,
  type Graph,
  type GraphPass,
  type QuantizeRequest,
  quantizeOptions,
  resolvePasses,
} from '@vlmkit/onnx-graph';
import type { DeviceRequest, VlmSession } from '@vlmkit/runtime';
import { Checkpoint, type ModelFiles } from '@vlmkit/safetensors';
import { cachedSession, deviceProfile, hasFloat16Kernels, memAvailable, openCheckpoint, planDevice } from '#platform';
import { ModelError } from './errors.js';
import type { DecodeLoop } from './graph-loop.js';
import type { CheckpointVersion } from './graph-store.js';
import { LoadResources } from './load-resources.js';
import { MemoryBudget } from './memory-check.js';
import { memorySession } from './memory-session.js';
import type { CheckpointSource } from './model-source.js';
import { PROFILE_FIELDS, type Profile, type ProfileName, type ProfileOverrides, resolveProfile } from './profiles.js';
import { LoadSteps, type OnLoadProgress } from './progress.js';
import type { SessionCacheOptions } from './session-cache.node.js';
import { VisionSession } from './vision-session.js';

/** Block-quantized weights: the decoder's ('int8' / 'int4' / `QuantizeOptions`), or each side's. */
export type QuantizeChoice = QuantizeRequest | { decoder?: QuantizeRequest | undefined; vision?: QuantizeRequest | undefined };

/** Whose implementation a family follows where vLLM's and HF transformers' differ. */
export type Reference = 'vllm' | 'hf';

/**
 * What a user chooses when loading a model (`fromPretrained`, `loadPretrained`): the device, the compute
 * dtype, quantization and the profile, plus where graphs are cached and two options of one family each.
 * How the model runs on the device (cache layout, decode loop, graph passes, experts, sessions) is the profile's.
 */
export interface LoadOptions {
  /**
   * Node: 'auto' (default): CUDA when its EP binaries are present and a GPU answers, else CPU; or 'cpu', 'cuda'.
   * A page (onnxruntime-web): 'auto' (WebGPU when `navigator.gpu` gives an adapter, else WASM), 'webgpu', 'wasm'
   * ('cpu' is WASM).
   */
  device?: DeviceRequest | undefined;
  /**
   * The float type the vision encoder and decoder compute in: 'float32' (default; float16 on a WebGPU adapter with
   * shader-f16 when nothing is quantized, the profile's `preferFloat16`), 'float16' or 'bfloat16' (models README,
   * "Compute dtype": what runs where; ORT's CPU EP has no bfloat16 kernels). Not with `quantize`.
   */
  dtype?: ComputeDType | undefined;
  /**
   * Block-quantized weights (MatMulNBits, block 32), quantized while the checkpoint streams in: 'int8' or
   * 'int4' for the decoder's linear layers, experts and LM head (the vision side stays float), or
   * `{ decoder, vision }` for either side (vision: the tower's and the projector's linear layers). Also
   * `QuantizeOptions` for measurements. Default: float.
   */
  quantize?: QuantizeChoice | undefined;
  /**
   * How the model runs: a profile by name ('cpu', 'cuda', 'web', 'webgpu'), or profile fields over the device's profile (for
   * benchmarks: `{ loop: 'graph' }`, `{ ...PROFILES.cuda, threads: 4 }`). Default: the device's (`PROFILES`).
   */
  profile?: ProfileName | ProfileOverrides | undefined;
  /**
   * Where built graphs are cached. Node: a directory; default `$XDG_CACHE_HOME/vlmkit`, else `~/.cache/vlmkit`;
   * never the model directory unless it is passed here. A page: 'opfs:<folder>' (default 'opfs:vlmkit', a folder
   * of the origin's private file system) or 'none' (no cache). Entries are keyed by the graph and the checkpoint
   * files' stamps (a file changed in place, a URL with another ETag, is built again) and verified on load.
   */
  cacheDir?: string | undefined;
  /**
   * Called as each load step (weights, then each session's graph and session) starts and ends, and within a step
   * with how far its work is (`LoadProgress.detail`: bytes read, layer quantized): for progress bars.
   */
  onProgress?: OnLoadProgress | undefined;
  /**
   * A PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) merged at load, for families whose spec
   * supports adapters: its directory's path, or its files (`ModelFiles`, for a load from `ModelFiles`).
   */
  adapter?: string | ModelFiles | undefined;
  /** Where a family's vLLM and HF transformers implementations differ, whose rule to follow: 'vllm' (default) or 'hf'. */
  reference?: Reference | undefined;
}

/** Every load option with a line about it: what the CLI's flags and the benchmark tools read. */
export const LOAD_OPTIONS: Readonly<Record<keyof LoadOptions, string>> = {
  device: "'auto' (default: CUDA when its EP and a GPU answer, else CPU), 'cpu' or 'cuda'",
  dtype:
    "the float type the graphs compute in: 'float32' (default; float16 on WebGPU with shader-f16), 'float16' or 'bfloat16'; not with quantize",
  quantize: "block-quantized weights: 'int8' | 'int4' (the decoder) or { decoder, vision }",
  profile: "how the model runs: 'cpu' | 'cuda' | 'web' | 'webgpu' (default: the device's) or profile fields over it (PROFILES)",
  cacheDir: "where built graphs are cached (default $XDG_CACHE_HOME/vlmkit, else ~/.cache/vlmkit; a page: 'opfs:vlmkit' or 'none')",
  onProgress: 'called as each load step (weights, each graph, each session) starts and ends, and with its work between',
  adapter: 'a PEFT LoRA adapter directory merged into the decoder at load (families that support adapters)',
  reference: "where a family's vLLM and HF implementations differ, whose rule to follow: 'vllm' (default) or 'hf'",
};

/** Load options of earlier builds that are spelled differently now. */
const RENAMED: Readonly<Record<string, string>> = {
  computeDtype: 'dtype',
  quantizeVision: "quantize: { decoder, vision: 'int8' | 'int4' }",
};

/** What the load options and the profile decide about the decoder graph. */
export interface DecoderBuild {
  loop: DecodeLoop;
  kvCache: KvCacheMode;
  quantize: QuantizeRequest | undefined;
  /** The rewrites run on the built decoder graph, in order (the profile's `decoderPasses`). */
  passes: readonly GraphPass[];
  /** ERNIE: the If that skips the vision experts without vision tokens (the profile's). */
  emptyModalityIf: boolean;
  computeDtype: ComputeDType;
}

/** What the load options and the profile decide about the vision encoder's graph. */
export interface VisionBuild {
  computeDtype: ComputeDType;
  quantize: QuantizeRequest | undefined;
  /** The rewrites run on it after quantization, in order (the profile's `visionPasses`). */
  passes: readonly GraphPass[];
}

/** A model's part of a load: its graph-cache names, how its weights map, how its graphs are built. */
export interface ModelLoadSpec<Mapped> {
  /** Graph-cache entries are `${name}-vision` and `${name}-decoder` (`${name}-decode-loop` for loop 'graph'). */
  name: string;
  /** The checkpoint directory (absolute), or its files. */
  root: CheckpointSource;
  options: LoadOptions;
  /** When the load began (before the config was read): `timings.loadMs` counts from here. */
  startedAt: number;
  /** Maps the checkpoint's weights (lazy tensors: read while the graphs are written, then the checkpoint closes). */
  weights(ckpt: Checkpoint, build: DecoderBuild): Promise<Mapped>;
  visionGraph(mapped: Mapped, build: VisionBuild): Graph;
  decoderGraph(mapped: Mapped, build: DecoderBuild): Graph;
  /** Files besides the checkpoint that the decoder's graph-cache entry depends on (a LoRA adapter's). */
  extraFiles?: ((mapped: Mapped) => string[]) | undefined;
  /** The same for a load from `ModelFiles`: those files by name and `ByteSource.stamp` (the page cache's key). */
  extraVersion?: ((mapped: Mapped) => { files: string[]; stamps: string[] } | undefined) | undefined;
}

export interface ModelTimings {
  /** Reading config.json and the safetensors headers, mapping weights. */
  loadMs: number;
  /** Building the graphs and writing (or finding) them in the cache. */
  buildMs: number;
  /** Creating the ORT sessions. */
  sessionMs: number;
}

/** A loaded model's sessions and how its decoder was built: what `DecoderModel`'s constructor takes. */
export interface LoadedSessions {
  vision: VisionSession;
  decoder: VlmSession;
  build: DecoderBuild;
  timings: ModelTimings;
}

/** The load options checked and resolved against the profile: what the load builds and how it opens sessions. */
export interface ResolvedLoad {
  profile: Profile;
  decoder: DecoderBuild;
  vision: VisionBuild;
  session: SessionCacheOptions;
}

/**
 * Checks the load options (BAD_LOAD_OPTIONS naming the option; INCOMPATIBLE_OPTIONS for a 16-bit dtype with
 * quantized weights, or int8 weights on WebGPU) and resolves them with the profile, before anything is opened.
 * `planned`: the device the profile plans for (default the request; a page resolves 'auto' first: `planDevice`);
 * `float16Kernels`: whether it has float16 kernels (`hasFloat16Kernels`), for the profile's `preferFloat16`.
 */
export function resolveLoad(
  options: LoadOptions,
  planned: DeviceRequest | undefined = options.device,
  float16Kernels = false,
): ResolvedLoad {
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || key in LOAD_OPTIONS) continue;
    const now = (PROFILE_FIELDS as string[]).includes(key)
      ? `is a profile field now: profile: { ${key}: ... }`
      : RENAMED[key] !== undefined
        ? `is ${RENAMED[key]} now`
        : 'is not one';
    throw new ModelError('BAD_LOAD_OPTIONS', `load option '${key}' ${now} (load options: ${Object.keys(LOAD_OPTIONS).join(', ')})`);
  }
  const quantize = quantizeParts(options.quantize);
  const profile = resolveProfile(options.profile, planned);
  const quantized = quantize.decoder !== undefined || quantize.vision !== undefined;
  const dtype = options.dtype ?? (profile.preferFloat16 && float16Kernels && !quantized ? 'float16' : undefined);
  const computeDtype = checkDtypeQuantize(dtype, 'dtype', {
    quantize: quantize.decoder,
    'quantize.vision': quantize.vision,
  });
  if (planned === 'webgpu') checkWebGpuQuantize(quantize);
  return {
    profile,
    decoder: {
      loop: profile.loop,
      kvCache: profile.kvCache,
      quantize: quantize.decoder,
      passes: resolvePasses(profile.decoderPasses),
      emptyModalityIf: profile.emptyModalityIf,
      computeDtype,
    },
    vision: { computeDtype, quantize: quantize.vision, passes: resolvePasses(profile.visionPasses) },
    session: {
      cacheDir: options.cacheDir,
      device: options.device,
      verifyCache: profile.verifyCache,
      threads: profile.threads,
      logger: profile.logger,
      prepack: profile.prepack === 'quantized' ? undefined : profile.prepack,
      // The packed layouts are the CPU EP's; 'auto' may be CUDA.
      packedWeights: deviceProfile(planned) === 'cpu' ? profile.packedWeights : 'memory',
      memoryCheck: profile.memoryCheck,
      emulateBfloat16: profile.emulateBfloat16,
    },
  };
}

/**
 * The load both models run: options resolved and checked first, the checkpoint mapped, the vision encoder's and
 * the decoder's sessions found in the graph cache or built into it. A failure part-way closes the checkpoint and
 * releases the sessions already made (`LoadResources`).
 */
export async function loadSessions<Mapped>(spec: ModelLoadSpec<Mapped>): Promise<LoadedSessions> {
  const { name, root, options } = spec;
  const planned = await planDevice(options.device);
  const resolved = resolveLoad(options, planned, await hasFloat16Kernels(planned));
  const { profile, decoder: build, vision: visionBuild, session } = resolved;
  const steps = new LoadSteps(2, options.onProgress);
  const held = new LoadResources();
  // The vision encoder's and the decoder's sessions are checked together against the memory available.
  const memory = new MemoryBudget(memAvailable);
  try {
    const open = () => (typeof root === 'string' ? openCheckpoint(root) : Checkpoint.fromFiles(root));
    let checkpoint: Checkpoint | undefined;
    const mapped = await steps.weights(async () => {
      checkpoint = held.checkpoint(steps.watch(await open()));
      return spec.weights(checkpoint, build);
    });
    const t1 = performance.now();
    // A directory's graphs are found in the graph cache or built into it; the graphs of `ModelFiles` are built in
    // memory, in a page through its graph cache in OPFS (./memory-session.ts).
    const sessionOf = (
      g: Graph,
      sessionName: string,
      onSession: () => void,
      extras: { extraFiles?: string[] | undefined; extraVersion?: { files: string[]; stamps: string[] } | undefined; reopenable?: boolean },
      opts: SessionCacheOptions = session,
    ) =>
      typeof root === 'string'
        ? cachedSession(g, root, sessionName, opts, {
            ...(extras.extraFiles ? { extraFiles: extras.extraFiles } : {}),
            onSession,
            memory,
          })
        : memorySession(g, root.root, sessionName, opts, {
            onSession,
            memory,
            reopenable: extras.reopenable,
            checkpoint: withVersion(checkpoint, extras.extraVersion),
          });
    const visionName = `${name}-vision`;
    // The graphs as the builders write them: the cache keys them with their passes and runs those on a miss only.
    // Each session is held as soon as it exists: a progress callback that throws after it still releases it.
    const vision = await steps.session(visionName, { quantize: visionBuild.quantize !== undefined }, async (onSession) =>
      held.session(
        await sessionOf(
          deferPasses(() => spec.visionGraph(mapped, visionBuild)),
          visionName,
          onSession,
          {
            reopenable: profile.visionSession === 'per-call',
          },
          profile.visionPrepack ? { ...session, prepack: true } : session,
        ),
      ),
    );
    const decoderName = build.loop === 'graph' ? `${name}-decode-loop` : `${name}-decoder`;
    const extraFiles = spec.extraFiles?.(mapped);
    const extraVersion = spec.extraVersion?.(mapped);
    const decoder = await steps.session(decoderName, { quantize: build.quantize !== undefined }, async (onSession) =>
      held.session(
        await sessionOf(
          deferPasses(() => spec.decoderGraph(mapped, build)),
          decoderName,
          onSession,
          { extraFiles, extraVersion },
        ),
      ),
    );
    // Lazy (transformed) tensors are read only while a model is first written; the sessions hold the weights now.
    await held.closeCheckpoint();
    const visionSession = await VisionSession.open(vision.session, vision.reopen, profile.visionSession);
    held.keep();
    return {
      vision: visionSession,
      decoder: decoder.session,
      build,
      timings: {
        loadMs: t1 - spec.startedAt,
        buildMs: vision.buildMs + decoder.buildMs,
        sessionMs: vision.sessionMs + decoder.sessionMs,
      },
    };
  } finally {
    await held.dispose();
  }
}

/** The checkpoint's version with the files besides it that a graph depends on (a LoRA adapter's), for the page cache's key. */
function withVersion(
  checkpoint: Checkpoint | undefined,
  extra: { files: string[]; stamps: string[] } | undefined,
): CheckpointVersion | undefined {
  if (checkpoint === undefined || extra === undefined || extra.files.length === 0) return checkpoint;
  return { files: () => [...checkpoint.files(), ...extra.files], stamps: () => [...checkpoint.stamps(), ...extra.stamps] };
}

/**
 * Refuses a compute dtype other than float32 with quantized weights (they are built in float32), naming the
 * options as the caller spells them (`quantized`: option name -> its request, undefined when not given).
 */
export function checkDtypeQuantize(
  dtype: ComputeDType | undefined,
  dtypeName: string,
  quantized: Readonly<Record<string, unknown>>,
): ComputeDType {
  const d = dtype ?? 'float32';
  for (const [option, request] of Object.entries(quantized)) {
    if (d !== 'float32' && request !== undefined) {
      throw new ModelError(
        'INCOMPATIBLE_OPTIONS',
        `${dtypeName} '${d}' cannot be combined with ${option} (quantized weights are built in float32); drop one of them.`,
      );
    }
  }
  return d;
}

/** `quantize` as each side's request, each checked (BAD_LOAD_OPTIONS naming it) before anything is opened. */
function quantizeParts(q: QuantizeChoice | undefined): { decoder?: QuantizeRequest; vision?: QuantizeRequest } {
  if (q === undefined) return {};
  const sides = typeof q === 'object' && q !== null && !('bits' in q);
  if (sides) {
    for (const key of Object.keys(q)) {
      if (key !== 'decoder' && key !== 'vision')
        throw new ModelError(
          'BAD_LOAD_OPTIONS',
          `quantize: unknown key '${key}' (a mode 'int8' | 'int4', QuantizeOptions, or { decoder, vision })`,
        );
    }
  }
  const parts = sides ? (q as { decoder?: QuantizeRequest; vision?: QuantizeRequest }) : { decoder: q as QuantizeRequest };
  const out: { decoder?: QuantizeRequest; vision?: QuantizeRequest } = {};
  for (const side of ['decoder', 'vision'] as const) {
    const request = parts[side];
    if (request === undefined) continue;
    try {
      quantizeOptions(request, sides ? `quantize.${side}` : 'quantize');
    } catch (e) {
      throw new ModelError('BAD_LOAD_OPTIONS', e instanceof Error ? e.message : String(e));
    }
    out[side] = request;
  }
  return out;
}

/** onnxruntime-web's WebGPU MatMulNBits takes 4-bit blocks only (it fails at session creation on 8-bit ones). */
function checkWebGpuQuantize(q: { decoder?: QuantizeRequest; vision?: QuantizeRequest }): void {
  for (const side of ['decoder', 'vision'] as const) {
    const request = q[side];
    if (request !== undefined && quantizeOptions(request).bits !== 4) {
      throw new ModelError(
        'INCOMPATIBLE_OPTIONS',
        `quantize${side === 'vision' ? '.vision' : ''}: 8-bit weights cannot run on WebGPU (onnxruntime-web's WebGPU MatMulNBits takes 4-bit ones only); quantize 'int4', or load with device 'wasm'.`,
      );
    }
  }
}
