import { join, resolve } from 'node:path';
import {
  buildGraniteDecodeLoopModel,
  buildGraniteTextDecoderModel,
  GRANITE_DECODER_IO,
  type GraniteDecoderFeeds,
  graniteDecodePositions,
  graniteDecoderFeeds,
  type KvCacheMode,
} from '@vlmkit/moe-decoder';
import type { OpSet, QuantizeRequest } from '@vlmkit/onnx-graph';
import { float32, type HostTensor, int64, type KvCache, type VlmSession } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import { loraOverlay, readLoraAdapter } from '@vlmkit/weight-mapper';
import { readConfigFile } from '../config-file.js';
import {
  type ComputeDtypeOption,
  checkComputeDtype,
  DEFAULT_KV_CACHE,
  DecoderModel,
  type DecodeStep,
  type ModelTimings,
} from '../decoder-model.js';
import { ModelError } from '../errors.js';
import { readGenerationConfig } from '../generation-tokens.js';
import { DEFAULT_DECODE_LOOP, type DecodeLoop } from '../graph-loop.js';
import { attentionMask, intRows, knownInputs, perToken, pixelsFor, pixelsNeed, tokenIds } from '../inputs-check.js';
import { LoadResources } from '../load-resources.js';
import { resolveOps } from '../ops-choice.js';
import { LoadSteps, type OnLoadProgress } from '../progress.js';
import { cachedSession, type SessionCacheOptions } from '../session-cache.js';
import { type VisionRunner, VisionSession, type VisionSessionOption } from '../vision-session.js';
import type { Size } from './anyres.js';
import { type Granite4VisionConfig, granite4VisionConfig } from './config.js';
import { analyzeGranitePrompt, type GranitePrompt } from './prompt.js';
import { buildGraniteVisionEncoder, GRANITE_VISION_ENCODER_IO, graniteVisionEncoderFeeds } from './vision-encoder.js';
import { loadGraniteWeights } from './weights.js';

/** HF forward kwargs, by their HF names. */
export interface GraniteInputs {
  input_ids: HostTensor;
  attention_mask?: HostTensor | undefined;
  /** [images, tiles, C, S, S] (zero-padded tiles, as HF's processor) or [tiles, C, S, S]. */
  pixel_values?: HostTensor | undefined;
  /** [images, 2] (height, width) of the original images. */
  image_sizes?: HostTensor | undefined;
  /** [B, S]; default: cumsum(attention_mask) - 1, padding at 1 (what HF generate uses). */
  position_ids?: HostTensor | undefined;
}

/** The inputs Granite 4 Vision reads (HF Granite4VisionForConditionalGeneration.forward's tensors). */
export const GRANITE_INPUT_NAMES = [
  'input_ids',
  'attention_mask',
  'pixel_values',
  'image_sizes',
  'position_ids',
] as const satisfies readonly (keyof GraniteInputs)[];

export interface GraniteForwardOutputs {
  logits: HostTensor<'float32'>;
  /** Per injected level k (layerwise in deepstack_layer_map order, then spatial): [num_image_tokens, D], as packed for injection. */
  deepstack: HostTensor<'float32'>[];
}

export interface GraniteLoadOptions extends SessionCacheOptions, ComputeDtypeOption, VisionSessionOption {
  /** A PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors) merged into the LM at load. */
  adapter?: string | undefined;
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

/** IBM Granite 4 Vision: vision encoder (SigLIP + window Q-Former projectors + anyres packing) and deepstack decoder sessions. */
export class Granite4Vision extends DecoderModel<GraniteInputs, GranitePrompt, HostTensor<'float32'>[]> {
  protected readonly dims;
  protected readonly io = GRANITE_DECODER_IO;
  protected readonly tokens;

  private constructor(
    readonly config: Granite4VisionConfig,
    vision: VisionRunner,
    decoder: VlmSession,
    timings: ModelTimings,
  ) {
    super(vision, decoder, timings);
    this.dims = config.text;
    this.tokens = config.tokens;
  }

  static async fromPretrained(dir: string, options: GraniteLoadOptions = {}): Promise<Granite4Vision> {
    const t0 = performance.now();
    const root = resolve(dir);
    const { json } = await readConfigFile(root);
    const config = granite4VisionConfig(json, await readGenerationConfig(root));
    const text = config.text;
    const steps = new LoadSteps(2, options.onProgress);
    const kvCache = options.kvCache ?? DEFAULT_KV_CACHE;
    const ops = resolveOps(options.ops, options.device);
    const computeDtype = checkComputeDtype(options);
    // A failed load closes the checkpoint and releases the sessions it made (load-resources.ts).
    const held = new LoadResources();
    try {
      const { adapter, mapped } = await steps.weights(async () => {
        const ckpt = held.checkpoint(await Checkpoint.open(root));
        const adapter = options.adapter ? await readLoraAdapter(resolve(options.adapter), ckpt) : undefined;
        const mapped = await loadGraniteWeights(ckpt, config, text, adapter ? { overlay: loraOverlay(adapter) } : {});
        return { adapter, mapped };
      });
      const t1 = performance.now();
      const vision = held.session(
        await steps.session('granite-vision', (onSession) =>
          cachedSession(
            buildGraniteVisionEncoder(mapped.vision, mapped.projectors, config, computeDtype),
            root,
            'granite-vision',
            options,
            {
              onSession,
            },
          ),
        ),
      );
      const levels = config.levels.map((l) => l.llmLayer);
      const extraFiles = adapter ? [join(adapter.dir, 'adapter_model.safetensors'), join(adapter.dir, 'adapter_config.json')] : [];
      const loop = options.loop ?? DEFAULT_DECODE_LOOP;
      const session = loop === 'graph' ? 'granite-decode-loop' : 'granite-decoder';
      const decoder = held.session(
        await steps.session(session, (onSession) =>
          cachedSession(
            loop === 'graph'
              ? buildGraniteDecodeLoopModel(mapped.decoder, text, { levels, quantize: options.quantize, ops, computeDtype })
              : buildGraniteTextDecoderModel(mapped.decoder, text, {
                  levels,
                  logitsToKeep: true,
                  kvCache,
                  quantize: options.quantize,
                  ops,
                  computeDtype,
                }),
            root,
            session,
            options,
            {
              extraFiles,
              onSession,
            },
          ),
        ),
      );
      await held.closeCheckpoint();
      const visionSession = await VisionSession.open(vision.session, vision.reopen, options.visionSession);
      const model = new Granite4Vision(config, visionSession, decoder.session, {
        loadMs: t1 - t0,
        buildMs: vision.buildMs + decoder.buildMs,
        sessionMs: vision.sessionMs + decoder.sessionMs,
      });
      model.kvCache = kvCache;
      model.loop = loop;
      model.computeDtype = computeDtype;
      held.keep();
      return model;
    } finally {
      await held.dispose();
    }
  }

  async forward(inputs: GraniteInputs): Promise<GraniteForwardOutputs> {
    if (this.loop !== 'host') this.loopUnavailable('forward');
    const p = this.prompt(inputs);
    const deepstack = await this.encodeVision(inputs, p);
    const logits = GRANITE_DECODER_IO.logits;
    const out = await this.decoder.run(this.keepLogits(this.prefillFeeds(p, deepstack, this.newCache(p.batch)), 0), { outputs: [logits] });
    return { logits: out[logits] as HostTensor<'float32'>, deepstack };
  }

  protected prompt(inputs: GraniteInputs): GranitePrompt {
    knownInputs(inputs, GRANITE_INPUT_NAMES, 'Granite 4 Vision');
    const ids = tokenIds(inputs.input_ids, this.dims.vocabSize);
    return analyzeGranitePrompt(
      {
        inputIds: ids.data,
        shape: [ids.batch, ids.seq],
        attentionMask: attentionMask(inputs.attention_mask, ids.batch, ids.seq),
        positionIds: perToken(inputs.position_ids, 'position_ids', ids.batch, ids.seq),
      },
      this.config,
    );
  }

  protected async encodeVision(inputs: GraniteInputs, prompt: GranitePrompt): Promise<HostTensor<'float32'>[]> {
    const placeholders = prompt.imagePositions.length;
    const D = this.config.text.hiddenSize;
    const sizes = imageSizes(inputs.image_sizes);
    if (sizes.length === 0) {
      pixelsNeed(inputs.pixel_values, 'pixel_values', 'image_sizes', false);
      if (placeholders > 0)
        throw new ModelError(
          'PLACEHOLDER_MISMATCH',
          `the prompt has ${placeholders} image tokens (id ${this.config.tokens.image}) but no pixel_values / image_sizes were given`,
        );
      return this.config.levels.map(() => float32(new Float32Array(0), [0, D]));
    }
    const pixels = pixelsFor(inputs.pixel_values, 'pixel_values', 'image_sizes');
    const { feeds, plan } = graniteVisionEncoderFeeds(pixels, sizes, this.config);
    const features = plan.indices.length;
    if (features !== placeholders) {
      throw new ModelError(
        'PLACEHOLDER_MISMATCH',
        `Image features and image tokens do not match: the prompt has ${placeholders} image tokens (id ${this.config.tokens.image}) but image_sizes (${sizes.map((s) => s.join('x')).join(', ')}) pack into ${features} features (${plan.tokensPerImage.join(' + ')}). Build input_ids with the processor's token count per image.`,
      );
    }
    const out = await this.vision.run(feeds);
    return this.config.levels.map((l) => out[GRANITE_VISION_ENCODER_IO.deepstack(l.k)] as HostTensor<'float32'>);
  }

  protected prefillFeeds(p: GranitePrompt, deepstack: readonly HostTensor[], cache: KvCache): GraniteDecoderFeeds<HostTensor> {
    return graniteDecoderFeeds<HostTensor>({
      inputIds: int64(p.inputIds, [p.batch, p.seq]),
      attentionMask: int64(p.attentionMask, [p.batch, p.seq]),
      positionIds: int64(p.positionIds, [p.batch, p.seq]),
      past: cache.layers(),
      image: { positions: int64(p.imagePositions, [p.imagePositions.length]), deepstack },
    });
  }

  /** The first generated token's position per row: its count of real tokens (`graniteDecodePositions`). */
  protected loopPositions(p: GranitePrompt): number[] {
    return Array.from(graniteDecodePositions(p.realTokens), Number);
  }

  /** Generated tokens are text: no image rows, and each row continues at its count of real tokens so far. */
  protected stepFeeds(p: GranitePrompt, { tokens, attentionMask, realTokens, cache }: DecodeStep): GraniteDecoderFeeds<HostTensor> {
    const B = p.batch;
    const D = this.config.text.hiddenSize;
    return graniteDecoderFeeds<HostTensor>({
      inputIds: int64(tokens, [B, 1]),
      attentionMask,
      positionIds: int64(graniteDecodePositions(realTokens), [B, 1]),
      past: cache.layers(),
      image: { positions: int64([], [0]), deepstack: this.config.levels.map(() => float32(new Float32Array(0), [0, D])) },
    });
  }
}

/** `image_sizes`: int64 [N, 2] rows (height, width). */
function imageSizes(t: HostTensor | undefined): Size[] {
  return intRows(t, 'image_sizes', ['height', 'width']).map(([h, w]) => [h!, w!] as const);
}
