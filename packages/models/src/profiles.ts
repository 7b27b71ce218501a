// Execution profiles: how a model runs on a device, decided once per device from measurements. The user
// chooses the device, the compute dtype and quantization (model-load.ts `LoadOptions`); everything else is
// here, and a benchmark overrides it by passing `profile: { loop: 'graph' }` or another profile by name.

import type { KvCacheMode } from '@vlmkit/moe-decoder';
import { type OpSet, PASS_NAMES, type PassName, WEBGPU_PASSES } from '@vlmkit/onnx-graph';
import type { DeviceRequest } from '@vlmkit/runtime';
import { deviceProfile } from '#platform';
import { ModelError } from './errors.js';
import { DECODE_LOOPS, type DecodeLoop } from './graph-loop.js';
import { VISION_SESSION_MODES, type VisionSessionMode } from './vision-session.js';

export type ProfileName = 'cpu' | 'cuda' | 'web' | 'webgpu';

/** Everything about a load that is not the user's choice. */
export interface Profile {
  /** 'cpu', 'cuda', 'web', 'webgpu', or a benchmark's own name for an overridden profile. */
  readonly name: string;
  /** The decoder's KV cache layout (moe-decoder `KvCacheMode`). */
  readonly kvCache: KvCacheMode;
  /** Where the generation loop runs (`DecodeLoop`): one decoder graph per load. */
  readonly loop: DecodeLoop;
  /** The rewrites run on the decoder graph after it is built, in order (onnx-graph `PASSES`, by name). */
  readonly decoderPasses: readonly PassName[];
  /** The rewrites run on the vision encoder's graph after it is built, in order. */
  readonly visionPasses: readonly PassName[];
  /**
   * ERNIE: run the vision router and experts in an If that skips them when no token is a vision one (moe-decoder
   * `ErnieMoeOptions.emptyModalityIf`); false runs them on the empty modality instead.
   */
  readonly emptyModalityIf: boolean;
  /** How long the vision encoder's session lives (`VisionSessionMode`). */
  readonly visionSession: VisionSessionMode;
  /**
   * The compute dtype of a load that names none and quantizes nothing: float16 where the device has float16
   * kernels (a WebGPU adapter with 'shader-f16'), else float32. A load's own `dtype` always wins.
   */
  readonly preferFloat16: boolean;
  /** ORT's prepacking of constant weights: always, never, or for quantized graphs only (MatMulNBits needs it). */
  readonly prepack: boolean | 'quantized';
  /** The vision encoder's session prepacks its weights too (float ones included): `prepack` for it alone. */
  readonly visionPrepack: boolean;
  /**
   * Where a prepacking session's packed weights live: 'memory' (packed at every session creation, in ORT's
   * memory) or 'cache' (packed once, written beside the graph-cache entry with every weight the session holds,
   * then memory-mapped: page cache, reclaimable). CPU only; other devices take 'memory'.
   */
  readonly packedWeights: 'memory' | 'cache';
  /** ORT's intra-op threads; undefined: ORT's default (one per physical core). */
  readonly threads: number | undefined;
  /** Refuse a CPU session larger than the memory available (INSUFFICIENT_MEMORY) before ORT loads it. */
  readonly memoryCheck: boolean;
  /** How much of a cached graph's external data is re-hashed on load (`GraphCacheOptions.verify`). */
  readonly verifyCache: 'auto' | 'full';
  /** Run bfloat16 graphs on float32 kernels, rounding each result (for checking numbers on ORT's CPU EP). */
  readonly emulateBfloat16: boolean;
  /** Where the graph cache and the sessions report (default: stderr, when enabled). */
  readonly logger: ((msg: string) => void) | undefined;
}

/** A profile's fields to change: on the device's profile, or on a whole profile given with them. */
export type ProfileOverrides = Partial<Profile>;

/** The CPU EP's profile: every choice measured on CPU. */
const CPU: Profile = {
  name: 'cpu',
  // models README "Generation loop": 'append' writes only the new rows; 'concat' copies the cache each step.
  kvCache: 'append',
  // models README "Generation loop" (tools/bench/loop-ab.mjs): the host loop decodes faster on CPU.
  loop: 'host',
  // models README "Decoder passes" (tools/bench/ops-ab.mjs): the contrib passes prefill faster but decode slower.
  // An 'append' cache is read in place (float32 only; the pass matches nothing in a 'concat' or loop graph).
  // 'moe-experts-wide' (tools/bench/moe-crossover.mjs, docs/benchmarks.md "Where ORT's MoE kernel pays off on
  // CPU"): a layer's routed experts as one MoE where it has onnx-graph's WIDE_MOE_EXPERTS (128) or more, as
  // Qwen3-VL-30B's; fewer (ERNIE's 64 or 8 per modality) run faster as per-expert MatMuls. Before 'stored-layout',
  // which then finds only the Linears left (MoE's packed weights are its own copy).
  // models README "The graph cache": float32 weights read as the checkpoint stores them, no transposed copy.
  // 'expert-groups' last (docs/benchmarks.md, "Expert groups"): the per-expert dispatch that is left (layers of
  // 32+ experts) in Ifs of 8 experts, skipped when no token chose one; same numbers, Qwen3-VL-30B int4 decode -3.5%.
  // 'expert-gate-up' before it (docs/benchmarks.md, "Expert gate and up in one MatMulNBits"): a quantized expert's
  // gate and up in one kernel; same numbers, Qwen3-VL-30B int4 decode -2%.
  decoderPasses: ['moe-experts-wide', 'append-attention', 'stored-layout', 'expert-gate-up', 'expert-groups'],
  // Not 'skip-layer-norm' (docs/benchmarks.md, "Skip layer norm in the vision towers"): ORT's CPU kernel takes
  // the variance in one float32 pass (E[x^2] - mean^2), too coarse for HF's logits on a long video.
  // 'stored-layout-cast' (docs/benchmarks.md, "Stored layout for cast weights"): as 'stored-layout', and a 16-bit
  // checkpoint's float32 copy keeps its [out, in] layout (Qwen3-VL-30B's vision -7%); not for decoders (a one-row
  // product changes in its last bits). 'one-frame-attention' (docs/benchmarks.md, "One-frame attention"): an
  // image's attention without its all-zero frame bias, which ORT's CPU kernel reads per head.
  visionPasses: ['stored-layout-cast', 'one-frame-attention'],
  // Runs without vision tokens (every decode step) skip the ~75 nodes per layer of the empty modality.
  emptyModalityIf: true,
  // docs/benchmarks.md "Peak RSS": 'per-call' lowers the peak only for a process that encodes once.
  visionSession: 'resident',
  // ORT's CPU EP has no float16 matrix product on x86 (models README, "Compute dtype").
  preferFloat16: false,
  // models README "The graph cache": packing float weights costs load time and a copy of them (the largest
  // models do not fit); "Quantized weights": MatMulNBits runs on packed blocks only (tools/bench/quant-matmul.mjs).
  prepack: 'quantized',
  visionPrepack: false,
  // models README "Packed weights in the graph cache": 'cache' trades disk (the packed copy holds every weight
  // over 1 MiB again) for load time and resident memory; the default keeps the checkpoint the weight store.
  packedWeights: 'memory',
  threads: undefined,
  memoryCheck: true,
  verifyCache: 'auto',
  emulateBfloat16: false,
  logger: undefined,
};

const WEB: Profile = { ...CPU, name: 'web', memoryCheck: false };
const WEBGPU_PASS_NAMES = WEBGPU_PASSES.map((p) => p.name as PassName);

/**
 * One profile per device. The CUDA choices are stated ones that tools/gpu measures (tools/gpu/README.md, "What
 * the runs decide"); until then kvCache and loop are the CPU's (tools/gpu/bench.mjs times both loops).
 */
export const PROFILES: Readonly<Record<ProfileName, Profile>> = {
  cpu: CPU,
  cuda: {
    ...CPU,
    name: 'cuda',
    // tools/gpu/README.md "Fused ops": the fused attention kernels are what the CUDA EP has for 16-bit graphs,
    // and every contrib node stayed on the device in the placement list; ERNIE's experts are one MoE kernel
    // per modality. A quantized decoder's experts stay MatMulNBits: 'qmoe-experts' waits for the placement list
    // (tools/gpu/README.md: CUDA's QMoE takes 16-bit activations only).
    // 'stored-layout' is the CPU's choice, not measured on CUDA (cuBLAS takes a transposed operand as such).
    decoderPasses: ['skip-rms-norm', 'skip-layer-norm', 'contrib-attention', 'moe-experts', 'append-attention', 'stored-layout'],
    // An If's condition is read on the host: a device-to-host copy and sync per layer and step.
    emptyModalityIf: false,
    visionPasses: ['stored-layout'],
  },
  // onnxruntime-web's WASM EP, in a page. It is ORT's CPU EP compiled to WebAssembly, contrib kernels included:
  // every graph the cpu and cuda profiles build runs there with the CPU's numbers (models README, "The web
  // profile"), so it takes the CPU's measured choices. A page states no available memory (no check); its graphs
  // are built in memory on every load, so the cache settings do not apply.
  web: WEB,
  // onnxruntime-web's WebGPU EP (its JS EP). Its kernels decide the passes (models README, "The web profiles";
  // test:browser checks where each node is placed): FusedMatMul ('stored-layout'), the opset Attention that
  // 'append-attention' keeps and the float MoE have no WebGPU kernel, and ORT ran them on WASM with a copy each
  // way. The fused norms and attention have one. Then WEBGPU_PASSES for the kernels' limits (a full
  // MultiHeadAttention bias, `scale` folded into q, no zero-sized ScatterND, the tanh GELU written out, opset
  // 21). The empty-modality If stays: without it ERNIE's vision experts run on zero rows, which WebGPU kernels
  // refuse. float16 where the adapter has shader-f16: half the weight bytes to upload and read per token.
  webgpu: {
    ...WEB,
    name: 'webgpu',
    decoderPasses: ['skip-rms-norm', 'skip-layer-norm', 'contrib-attention', ...WEBGPU_PASS_NAMES],
    // No 'skip-layer-norm' in the towers (as the cpu profile): WebGPU has LayerNormalization too.
    visionPasses: [...WEBGPU_PASS_NAMES],
    preferFloat16: true,
  },
};

export const PROFILE_NAMES = Object.keys(PROFILES) as ProfileName[];

/**
 * The CLI's `--ops` shorthand, profile fields over the device's profile: 'contrib' takes the cuda profile's
 * decoder rewrites (its passes, ERNIE's experts as MoE among them, no empty-modality If), 'onnx' the cpu profile's.
 */
export const OPS_FIELDS: Readonly<Record<OpSet, ProfileOverrides>> = {
  onnx: { decoderPasses: PROFILES.cpu.decoderPasses, emptyModalityIf: PROFILES.cpu.emptyModalityIf },
  contrib: { decoderPasses: PROFILES.cuda.decoderPasses, emptyModalityIf: PROFILES.cuda.emptyModalityIf },
};

const KV_CACHE_MODES = ['append', 'concat'] as const satisfies readonly KvCacheMode[];

const PASS_LIST: [(v: unknown) => boolean, string] = [
  (v) => Array.isArray(v) && v.every((n) => (PASS_NAMES as readonly unknown[]).includes(n)),
  `a list of pass names (${PASS_NAMES.join(', ')})`,
];

/** What each field accepts: a list of values, or a check with what it expects. */
const FIELD_VALUES: { [K in keyof Profile]: readonly unknown[] | [(v: unknown) => boolean, string] } = {
  name: [(v) => typeof v === 'string' && v !== '', 'a non-empty string'],
  kvCache: KV_CACHE_MODES,
  loop: DECODE_LOOPS,
  decoderPasses: PASS_LIST,
  visionPasses: PASS_LIST,
  emptyModalityIf: [true, false],
  visionSession: VISION_SESSION_MODES,
  preferFloat16: [true, false],
  prepack: [true, false, 'quantized'],
  visionPrepack: [true, false],
  packedWeights: ['memory', 'cache'],
  threads: [(v) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 1), 'an integer >= 1, or undefined'],
  memoryCheck: [true, false],
  verifyCache: ['auto', 'full'],
  emulateBfloat16: [true, false],
  logger: [(v) => v === undefined || typeof v === 'function', 'a function (msg) => void, or undefined'],
};

/** The profile fields, for messages and tools. */
export const PROFILE_FIELDS = Object.keys(FIELD_VALUES) as (keyof Profile)[];

/**
 * The profile a load runs with: the named one, or the device's with `choice`'s fields over it. The device's
 * is the one `device` plans for (runtime's `chooseDevice`: 'auto' is CUDA when its EP and a GPU answer).
 */
export function resolveProfile(choice: ProfileName | ProfileOverrides | undefined, device: DeviceRequest | undefined): Profile {
  if (typeof choice === 'string') {
    const named = PROFILES[choice as ProfileName];
    if (named === undefined)
      throw badProfile(`profile must be one of ${PROFILE_NAMES.join(', ')} or an object of profile fields, got '${choice}'`);
    return named;
  }
  if (choice !== undefined && (typeof choice !== 'object' || choice === null || Array.isArray(choice))) {
    throw badProfile(`profile must be one of ${PROFILE_NAMES.join(', ')} or an object of profile fields, got ${String(choice)}`);
  }
  const base = PROFILES[deviceProfile(device)];
  if (choice === undefined) return base;
  for (const [key, value] of Object.entries(choice)) checkField(key, value);
  return { ...base, ...choice };
}

function checkField(key: string, value: unknown): void {
  const allowed = FIELD_VALUES[key as keyof Profile];
  if (allowed === undefined) throw badProfile(`profile: unknown field '${key}'; the fields are ${PROFILE_FIELDS.join(', ')}`);
  const [check, expects]: [(v: unknown) => boolean, string] =
    typeof allowed[0] === 'function'
      ? (allowed as [(v: unknown) => boolean, string])
      : [(v) => (allowed as readonly unknown[]).includes(v), `one of ${allowed.map((v) => String(v)).join(', ')}`];
  if (!check(value)) throw badProfile(`profile.${key} must be ${expects}, got ${typeof value === 'string' ? `'${value}'` : String(value)}`);
}

function badProfile(message: string): ModelError {
  return new ModelError('BAD_LOAD_OPTIONS', message);
}
