// How both assembled models load: their common load options, and the steps every load takes (weights mapped
// from the checkpoint, the vision encoder's session, the decoder's, from the graph cache or built into it), each
// model saying only how its weights map and how its two graphs are built.
import type { KvCacheMode } from '@vlmkit/moe-decoder';
import { type ComputeDType, type Graph, type OpSet, type QuantizeRequest, quantizeOptions } from '@vlmkit/onnx-graph';
import type { VlmSession } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import { type ComputeDtypeOption, checkComputeDtype, DEFAULT_KV_CACHE, type ModelTimings } from './decoder-model.js';
import { ModelError } from './errors.js';
import { DEFAULT_DECODE_LOOP, type DecodeLoop } from './graph-loop.js';
import { LoadResources } from './load-resources.js';
import { resolveOps } from './ops-choice.js';
import { LoadSteps, type OnLoadProgress } from './progress.js';
import { cachedSession, type SessionCacheOptions } from './session-cache.js';
import { VisionSession, type VisionSessionOption } from './vision-session.js';

/** The load options both models take (each adds its own: ERNIE's `reference`, Granite's `adapter`). */
export interface DecoderLoadOptions extends SessionCacheOptions, ComputeDtypeOption, VisionSessionOption {
  /** Called as each load step (weights, then each session's graph) starts and ends: for progress bars. */
  onProgress?: OnLoadProgress | undefined;
  /**
   * The decoder's linear layers, experts and LM head block-quantized at load (MatMulNBits, block 32): 'int8'
   * or 'int4', quantized while the checkpoint streams in; embeddings, norms, routers and the vision side
   * stay float. Its own graph-cache entry. Options (`QuantizeOptions`: symmetric, accuracyLevel, lmHead) for
   * measurements. Default: float32.
   */
  quantize?: QuantizeRequest | undefined;
  /**
   * The vision encoder's linear layers (tower, and resampler or projectors) block-quantized too, 'int8' or
   * 'int4' as `quantize` (which leaves the vision side float): for memory, where the vision weights are most of
   * a quantized model's (Granite's SigLIP tower and projectors: 2.3 GB in float32). Convolutions and norms
   * stay float. Its own graph-cache entry. Default: float32.
   */
  quantizeVision?: QuantizeRequest | undefined;
  /**
   * The decoder's KV cache (moe-decoder's `KvCacheMode`): 'append' (default) pre-allocates prompt + new tokens
   * once and each decode step writes only its new rows; 'concat' is the HF / optimum layout (each step returns
   * past + new, a copy of the whole cache). Its own graph-cache entry.
   */
  kvCache?: KvCacheMode | undefined;
  /**
   * The generation loop the decoder session is built for (`DecodeLoop`): 'host' (default, `DEFAULT_DECODE_LOOP`;
   * the step graph: one run per token, and `forward`) or 'graph' (the in-graph decode loop: the decoder step,
   * the token choice and the KV cache inside one ONNX Loop, a chunk of tokens per run; `kvCache` does not
   * apply, the Loop carries its cache). Its own graph-cache entry.
   */
  loop?: DecodeLoop | undefined;
  /**
   * The decoder's ops (onnx-graph's `OpSet`): 'onnx' the standard opset-23 Attention / RMSNormalization /
   * RotaryEmbedding, 'contrib' onnxruntime's com.microsoft fused kernels (MultiHeadAttention or
   * GroupQueryAttention, SkipSimplifiedLayerNormalization, RotaryEmbedding). Same numbers either way (within
   * float rounding). Default per device (`DEFAULT_OPS`). Its own graph-cache entry.
   */
  ops?: OpSet | undefined;
}

/** What the load options decide about the decoder graph, resolved (defaults applied, combinations checked). */
export interface DecoderBuild {
  loop: DecodeLoop;
  kvCache: KvCacheMode;
  quantize: QuantizeRequest | undefined;
  ops: OpSet;
  computeDtype: ComputeDType;
}

/** What the load options decide about the vision encoder's graph. */
export interface VisionBuild {
  computeDtype: ComputeDType;
  quantize: QuantizeRequest | undefined;
}

/** A model's part of a load: its graph-cache names, how its weights map, how its graphs are built. */
export interface ModelLoadSpec<Mapped> {
  /** Graph-cache entries are `${name}-vision` and `${name}-decoder` (`${name}-decode-loop` for loop 'graph'). */
  name: string;
  /** The checkpoint directory (absolute). */
  root: string;
  options: DecoderLoadOptions;
  /** When the load began (before the config was read): `timings.loadMs` counts from here. */
  startedAt: number;
  /** Maps the checkpoint's weights (lazy tensors: read while the graphs are written, then the checkpoint closes). */
  weights(ckpt: Checkpoint): Promise<Mapped>;
  visionGraph(mapped: Mapped, build: VisionBuild): Graph;
  decoderGraph(mapped: Mapped, build: DecoderBuild): Graph;
  /** Files besides the checkpoint that the decoder's graph-cache entry depends on (a LoRA adapter's). */
  extraFiles?: ((mapped: Mapped) => string[]) | undefined;
}

/** A loaded model's sessions and how its decoder was built: what `DecoderModel`'s constructor takes. */
export interface LoadedSessions {
  vision: VisionSession;
  decoder: VlmSession;
  build: DecoderBuild;
  timings: ModelTimings;
}

/**
 * The load both models run: options resolved and checked first, the checkpoint mapped, the vision encoder's and
 * the decoder's sessions found in the graph cache or built into it. A failure part-way closes the checkpoint and
 * releases the sessions already made (`LoadResources`).
 */
export async function loadSessions<Mapped>(spec: ModelLoadSpec<Mapped>): Promise<LoadedSessions> {
  const { name, root, options } = spec;
  for (const option of ['quantize', 'quantizeVision'] as const) checkQuantize(option, options[option]);
  const build: DecoderBuild = {
    loop: options.loop ?? DEFAULT_DECODE_LOOP,
    kvCache: options.kvCache ?? DEFAULT_KV_CACHE,
    quantize: options.quantize,
    ops: resolveOps(options.ops, options.device),
    computeDtype: checkComputeDtype(options),
  };
  const steps = new LoadSteps(2, options.onProgress);
  const held = new LoadResources();
  try {
    const mapped = await steps.weights(async () => spec.weights(held.checkpoint(await Checkpoint.open(root))));
    const t1 = performance.now();
    const visionName = `${name}-vision`;
    const vision = held.session(
      await steps.session(visionName, (onSession) =>
        cachedSession(
          spec.visionGraph(mapped, { computeDtype: build.computeDtype, quantize: options.quantizeVision }),
          root,
          visionName,
          options,
          {
            onSession,
          },
        ),
      ),
    );
    const decoderName = build.loop === 'graph' ? `${name}-decode-loop` : `${name}-decoder`;
    const extraFiles = spec.extraFiles?.(mapped);
    const decoder = held.session(
      await steps.session(decoderName, (onSession) =>
        cachedSession(spec.decoderGraph(mapped, build), root, decoderName, options, { ...(extraFiles ? { extraFiles } : {}), onSession }),
      ),
    );
    // Lazy (transformed) tensors are read only while a model is first written; the sessions hold the weights now.
    await held.closeCheckpoint();
    const visionSession = await VisionSession.open(vision.session, vision.reopen, options.visionSession);
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

/** Refuses a malformed quantize request before anything is opened (BAD_LOAD_OPTIONS naming the option). */
function checkQuantize(option: 'quantize' | 'quantizeVision', request: QuantizeRequest | undefined): void {
  if (request === undefined) return;
  try {
    quantizeOptions(request, option);
  } catch (e) {
    throw new ModelError('BAD_LOAD_OPTIONS', e instanceof Error ? e.message : String(e));
  }
}
