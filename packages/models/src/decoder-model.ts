// The shape both assembled models share: a vision encoder session and a decoder session with a KV cache,
// a prompt analysis, and generation on the shared decode loop (generate.ts). Each model states what differs:
// how a prompt is read, how its vision features are computed, and the decoder's feeds.

import { type KvCacheDType, type KvCacheMode, type KvTensors, kvCacheDType } from '@vlmkit/moe-decoder';
import type { ComputeDType } from '@vlmkit/onnx-graph';
import { type HostTensor, int64, KvCache, type KvCacheNames, type VlmSession } from '@vlmkit/runtime';
import { GrowingMask, lastPositionLogits, type PromptBatch, SlotMask } from './decode-state.js';
import { ModelError } from './errors.js';
import { type DecodeSteps, type GenerateResult, generateTokens, validateGenerateOptions } from './generate.js';
import type { GenerationTokens } from './generation-tokens.js';
import { DECODE_LOOPS, type DecodeLoop, generateInGraph, type ModelGenerateOptions, validateLoopChunk } from './graph-loop.js';
import { checkDtypeQuantize, type LoadedSessions, type ModelTimings } from './model-load.js';
import type { VisionRunner } from './vision-session.js';

/** exportModel's option: the float type its graphs compute in (the load option is `dtype`, model-load.ts). */
export interface ComputeDtypeOption {
  /**
   * The float type the vision encoder and decoder compute in (onnx-graph's `ComputeDType`): 'float32'
   * (default), 'float16' or 'bfloat16'. Weights are stored in it: a bf16 checkpoint with 'bfloat16' is used as
   * stored; other dtypes are converted while the graph is written. Not with `quantize`.
   */
  computeDtype?: ComputeDType | undefined;
}

/** exportModel's check of `computeDtype` against `quantize` (model-load.ts `checkDtypeQuantize`). */
export function checkComputeDtype(options: ComputeDtypeOption & { quantize?: unknown }): ComputeDType {
  return checkDtypeQuantize(options.computeDtype, 'computeDtype', { quantize: options.quantize });
}

/** What the decode loop reads of a model's parsed text config. */
export interface DecoderDims {
  readonly numHiddenLayers: number;
  readonly numKeyValueHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
}

/**
 * One decode step of B rows, each row on its own: the new token per row, the mask [B, P + 1] (the past's slots the
 * row attends, then the token itself), each row's position of its token (`loopPositions` + the tokens the row fed
 * before) and every layer's past [B, Hkv, P, hd] as fed (`KvCache.layers()`).
 */
export interface DecodeStep {
  tokens: readonly number[];
  attentionMask: HostTensor<'int64'>;
  positions: readonly number[];
  past: readonly Readonly<KvTensors<HostTensor>>[];
}

/**
 * What a batching engine (./engine.ts) runs of a model: one request's vision encoder and prompt alone, then decode
 * steps over the rows of many requests at once (`DecoderModel.batchDecoder`).
 */
export interface BatchDecoder {
  readonly dims: DecoderDims;
  /** The element type of the KV cache the decoder is fed and returns. */
  readonly kvDtype: KvCacheDType;
  readonly io: DecoderIo;
  /** generation_config.json's eos and pad ids (generate's defaults). */
  readonly tokens: GenerationTokens;
  /** Reads and checks one request's HF-named inputs (one sequence); throws before anything runs. */
  request(inputs: Record<string, HostTensor>): BatchRequest;
  /** One decode step over B rows: the logits [B * V] and the run's outputs (`present.*`: [B, Hkv, ., hd], the new row last). */
  step(step: DecodeStep): Promise<{ logits: Float32Array; outputs: Record<string, HostTensor> }>;
}

/** One request read by `BatchDecoder.request`, before its vision encoder and prompt run. */
export interface BatchRequest {
  /** Prompt positions: the KV cache rows its prefill makes. */
  readonly seq: number;
  /** The prompt's attention mask [seq] (1 = attended; left padding 0). */
  readonly mask: BigInt64Array;
  /** The first generated token's position (after ERNIE's M-RoPE delta). */
  readonly position: number;
  /** The vision encoder then the prompt on an empty cache: the last position's logits [V] and `present.*` [1, Hkv, seq, hd]. */
  prefill(): Promise<{ logits: Float32Array; outputs: Record<string, HostTensor>; visionMs: number }>;
  /**
   * The most new tokens the model's context leaves this prompt (a family model: max_position_embeddings - seq + 1,
   * the last one predicted from max_position_embeddings positions); undefined: no limit.
   */
  readonly maxNewTokens?: number | undefined;
}

/** A decoder's I/O that the loop needs: its KV cache names, its logits output and its `logits_to_keep` input. */
export interface DecoderIo extends KvCacheNames {
  readonly logits: string;
  readonly logitsToKeep: string;
}

/**
 * 'append' caches start with room for this many generated tokens (or maxNewTokens, if fewer) and double the
 * generated part when full: memory follows the tokens generated, not maxNewTokens.
 */
export const KV_CACHE_CHUNK = 256;

export abstract class DecoderModel<Inputs, Prompt extends PromptBatch, Vision> {
  protected readonly vision: VisionRunner;
  protected readonly decoder: VlmSession;
  readonly timings: ModelTimings;

  /** The sessions of a load (model-load.ts `loadSessions`) and what its decoder graph was built for. */
  protected constructor(loaded: LoadedSessions) {
    this.vision = loaded.vision;
    this.decoder = loaded.decoder;
    this.timings = loaded.timings;
    this.kvCache = loaded.build.kvCache;
    this.computeDtype = loaded.build.computeDtype;
    this.loop = loaded.build.loop;
  }

  /** The ORT device the sessions run on, and why it was chosen. */
  get device(): string {
    return this.decoder.device;
  }
  get deviceReason(): string {
    return this.decoder.deviceReason;
  }

  /**
   * How the decoder graph's KV cache works (moe-decoder's `KvCacheMode`); the subclass builds its graph with
   * the same. 'append': a cache pre-allocated for prompt + new tokens, each step writes its new rows only.
   */
  protected readonly kvCache: KvCacheMode;
  /** The float type the subclass built its graphs in (load option `dtype`); sizes the KV cache's dtype. */
  protected readonly computeDtype: ComputeDType;
  /**
   * Which generation loop the decoder session serves (`DecodeLoop`): 'host', the decoder step graph (one run
   * per token; also `forward`), or 'graph', the in-graph decode loop (moe-decoder `buildDecodeLoopModel`).
   */
  protected readonly loop: DecodeLoop;
  protected abstract readonly dims: DecoderDims;
  protected abstract readonly io: DecoderIo;
  protected abstract readonly tokens: GenerationTokens;
  /** The HF-named inputs checked (./inputs-check.ts) and read into the model's prompt analysis. */
  protected abstract prompt(inputs: Inputs): Prompt;
  protected abstract encodeVision(inputs: Inputs, prompt: Prompt): Promise<Vision>;
  protected abstract prefillFeeds(prompt: Prompt, vision: Vision, cache: KvCache): Record<string, HostTensor>;
  protected abstract stepFeeds(step: DecodeStep): Record<string, HostTensor>;
  /** Each row's position of the first generated token (the in-graph loop's `loop.next_positions`), as `stepFeeds` derives it. */
  protected abstract loopPositions(prompt: Prompt): readonly number[];

  /** The generation loop this model was loaded with (its profile's `loop`). */
  get decodeLoop(): DecodeLoop {
    return this.loop;
  }

  /** Greedy by default; sampling with temperature/topK/topP/seed. Returns the new tokens only. */
  async generate(inputs: Inputs, options: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }> {
    // Options first: a bad maxNewTokens would otherwise size the KV cache, after the vision encoder ran.
    validateGenerateOptions({ eos: this.tokens.eos, padTokenId: this.tokens.pad, ...options }, this.dims.vocabSize);
    validateLoopChunk(options.loopChunk);
    const loop = options.loop ?? this.loop;
    if (!DECODE_LOOPS.includes(loop))
      throw new ModelError('BAD_GENERATION_OPTIONS', `loop must be one of ${DECODE_LOOPS.join(', ')}, got ${String(loop)}`);
    if (loop !== this.loop) this.loopUnavailable(`generate with loop '${loop}'`);
    const p = this.prompt(inputs);
    const t0 = performance.now();
    const vision = await this.encodeVision(inputs, p);
    const visionMs = performance.now() - t0;
    const o = { eos: this.tokens.eos, padTokenId: this.tokens.pad, ...options };
    const result =
      loop === 'graph'
        ? await generateInGraph(
            {
              run: (feeds) => this.decoder.run(feeds),
              prompt: this.prefillFeeds(p, vision, this.newCache(p.batch)),
              nextPositions: this.loopPositions(p),
              batchSize: p.batch,
              vocabSize: this.dims.vocabSize,
              numLayers: this.dims.numHiddenLayers,
            },
            o,
          )
        : await generateTokens(this.decodeSteps(p, vision, options.maxNewTokens), o);
    return { ...result, visionMs };
  }

  /** Refuses `what` on a model whose decoder session is the other loop's graph (DECODE_LOOP_UNAVAILABLE). */
  protected loopUnavailable(what: string): never {
    const other = this.loop === 'host' ? 'graph' : 'host';
    throw new ModelError(
      'DECODE_LOOP_UNAVAILABLE',
      `${what} needs the decoder built for loop '${other}', but this model was loaded with loop: '${this.loop}' (one decoder graph per load). Load it with profile: { loop: '${other}' } (CLI --loop ${other}) for that.`,
    );
  }

  /** Its decoder for a batching engine (./engine.ts): the host loop's step graph, any batch of rows. */
  batchDecoder(): BatchDecoder {
    if (this.loop !== 'host') this.loopUnavailable('a batching engine (createEngine)');
    const V = this.dims.vocabSize;
    return {
      dims: this.dims,
      kvDtype: kvCacheDType(this.computeDtype),
      io: this.io,
      tokens: this.tokens,
      request: (inputs) => {
        const p = this.prompt(inputs as Inputs);
        if (p.batch !== 1)
          throw new ModelError('BAD_INPUT', `a batching engine takes one sequence per request; input_ids has ${p.batch} rows`);
        return {
          seq: p.seq,
          mask: p.attentionMask,
          position: this.loopPositions(p)[0]!,
          prefill: async () => {
            const t0 = performance.now();
            const vision = await this.encodeVision(inputs as Inputs, p);
            const visionMs = performance.now() - t0;
            const outputs = await this.decoder.run(this.keepLogits(this.prefillFeeds(p, vision, this.newCache(1)), 1));
            return { logits: lastPositionLogits(outputs[this.io.logits]!, 1, 1, V), outputs, visionMs };
          },
        };
      },
      step: async (step) => {
        const outputs = await this.decoder.run(this.keepLogits(this.stepFeeds(step), 1));
        return { logits: outputs[this.io.logits]!.data as Float32Array, outputs };
      },
    };
  }

  async release(): Promise<void> {
    await this.vision.release();
    await this.decoder.release();
  }

  /** `feeds` with `logits_to_keep` = n: logits for the last n positions of each row, 0 for all of them. */
  protected keepLogits<F extends Record<string, HostTensor>>(feeds: F, n: number): F & Record<string, HostTensor> {
    return { ...feeds, [this.io.logitsToKeep]: int64([n], []) };
  }

  /** An empty cache: the concat layout, or with `capacity` slots per row pre-allocated ('append' graphs). */
  protected newCache(batch: number, capacity?: number): KvCache {
    const d = this.dims;
    return new KvCache({
      numLayers: d.numHiddenLayers,
      numKvHeads: d.numKeyValueHeads,
      headDim: d.headDim,
      batchSize: batch,
      names: this.io,
      dtype: kvCacheDType(this.computeDtype),
      ...(capacity !== undefined ? { capacity } : {}),
    });
  }

  /**
   * The prompt run, then one token per row per step, the cache carried between runs. 'append': the cache holds
   * the prompt and the tokens fed back (at most `maxNewTokens - 1`: the last one sampled is never fed), in
   * slots allocated up front for `KV_CACHE_CHUNK` of them and doubled when full.
   */
  protected decodeSteps(p: Prompt, vision: Vision, maxNewTokens = 1): DecodeSteps {
    const B = p.batch;
    const V = this.dims.vocabSize;
    // Every position the loop can feed: the prompt and all but the last sampled token.
    const most = p.seq + Math.max(maxNewTokens - 1, 0);
    const capacity = this.kvCache === 'append' ? Math.min(most, p.seq + KV_CACHE_CHUNK) : undefined;
    const cache = this.newCache(B, capacity);
    const positions = [...this.loopPositions(p)];
    const slots = capacity !== undefined ? new SlotMask(p.attentionMask, B, p.seq, capacity) : undefined;
    const mask = slots ?? new GrowingMask(p.attentionMask, B, p.seq);
    // A long generation grows the cache (and its mask) by doubling the generated part, up to `most`.
    const room = () => {
      const cap = cache.capacity;
      if (slots === undefined || cap === undefined || cache.length < cap) return;
      const next = Math.min(most, cap + Math.max(KV_CACHE_CHUNK, cap - p.seq));
      cache.reserve(next);
      slots.reserve(next);
    };
    return {
      batchSize: B,
      vocabSize: V,
      prefill: async () => {
        // Only the last position's logits are computed: [B, 1, V], not [B, S, V].
        const out = await this.decoder.run(this.keepLogits(this.prefillFeeds(p, vision, cache), 1));
        cache.update(out);
        return lastPositionLogits(out[this.io.logits]!, B, 1, V);
      },
      step: async (tokens) => {
        room();
        const feeds = this.stepFeeds({ tokens, attentionMask: mask.next(), positions, past: cache.layers() });
        positions.forEach((_, b) => {
          positions[b]!++;
        });
        const out = await this.decoder.run(this.keepLogits(feeds, 1));
        cache.update(out);
        return lastPositionLogits(out[this.io.logits]!, B, 1, V);
      },
    };
  }
}
