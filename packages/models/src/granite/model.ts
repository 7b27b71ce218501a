import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildGraniteTextDecoderModel, type GraniteTextConfig, graniteTextConfigFromHf } from '@vlmkit/moe-decoder';
import { float32, type HostTensor, int64, KvCache, type VlmSession } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import { loraOverlay, readLoraAdapter } from '@vlmkit/weight-mapper';
import { GrowingMask, lastPositionLogits } from '../decode-state.js';
import { ModelError } from '../errors.js';
import { type DecodeSteps, type GenerateOptions, type GenerateResult, generateTokens } from '../generate.js';
import { cachedSession, type SessionCacheOptions } from '../session-cache.js';
import type { Size } from './anyres.js';
import { type Granite4VisionConfig, granite4VisionConfig } from './config.js';
import { buildGraniteVisionEncoder, graniteVisionFeeds } from './vision-encoder.js';
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

export interface GraniteForwardOutputs {
  logits: HostTensor<'float32'>;
  /** Per injected level k (layerwise in deepstack_layer_map order, then spatial): [num_image_tokens, D], as packed for injection. */
  deepstack: HostTensor<'float32'>[];
}

export interface GraniteLoadOptions extends SessionCacheOptions {
  /** A PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors) merged into the LM at load. */
  adapter?: string | undefined;
}

/** IBM Granite 4 Vision: vision encoder (SigLIP + window Q-Former projectors + anyres packing) and deepstack decoder sessions. */
export class Granite4Vision {
  private constructor(
    readonly config: Granite4VisionConfig,
    readonly text: GraniteTextConfig,
    private readonly vision: VlmSession,
    private readonly decoder: VlmSession,
    readonly timings: { loadMs: number; buildMs: number; sessionMs: number },
  ) {}

  get device(): string {
    return this.decoder.device;
  }
  get deviceReason(): string {
    return this.decoder.deviceReason;
  }

  static async fromPretrained(dir: string, options: GraniteLoadOptions = {}): Promise<Granite4Vision> {
    const t0 = performance.now();
    const root = resolve(dir);
    const json = JSON.parse(await readFile(join(root, 'config.json'), 'utf8')) as Record<string, unknown>;
    const config = granite4VisionConfig(json);
    const text = graniteTextConfigFromHf(json);
    const ckpt = await Checkpoint.open(root);
    const adapter = options.adapter ? await readLoraAdapter(resolve(options.adapter), ckpt.names()) : undefined;
    const mapped = await loadGraniteWeights(ckpt, config, text, adapter ? { overlay: loraOverlay(adapter) } : {});
    const t1 = performance.now();
    const vision = await cachedSession(
      buildGraniteVisionEncoder(mapped.vision, mapped.projectors, config),
      root,
      'granite-vision',
      options,
    );
    const levels = config.levels.map((l) => l.llmLayer);
    const extraFiles = adapter ? [join(adapter.dir, 'adapter_model.safetensors'), join(adapter.dir, 'adapter_config.json')] : [];
    const decoder = await cachedSession(buildGraniteTextDecoderModel(mapped.decoder, text, { levels }), root, 'granite-decoder', options, {
      extraFiles,
    });
    await ckpt.close();
    return new Granite4Vision(config, text, vision.session, decoder.session, {
      loadMs: t1 - t0,
      buildMs: vision.buildMs + decoder.buildMs,
      sessionMs: vision.sessionMs + decoder.sessionMs,
    });
  }

  async forward(inputs: GraniteInputs): Promise<GraniteForwardOutputs> {
    const p = this.prompt(inputs);
    const deepstack = await this.encodeVision(inputs, p.imagePositions.length);
    const out = await this.decoder.run(this.prefillFeeds(p, deepstack, this.newCache(p.batch)), { outputs: ['logits'] });
    return { logits: out.logits as HostTensor<'float32'>, deepstack };
  }

  async generate(inputs: GraniteInputs, options: GenerateOptions): Promise<GenerateResult & { visionMs: number }> {
    const p = this.prompt(inputs);
    const t0 = performance.now();
    const deepstack = await this.encodeVision(inputs, p.imagePositions.length);
    const visionMs = performance.now() - t0;
    const tc = (this.config.raw.text_config ?? {}) as { eos_token_id?: unknown; pad_token_id?: unknown };
    const eos = typeof tc.eos_token_id === 'number' ? tc.eos_token_id : undefined;
    const result = await generateTokens(this.decodeSteps(p, deepstack), {
      ...(eos !== undefined ? { eos } : {}),
      padTokenId: typeof tc.pad_token_id === 'number' ? tc.pad_token_id : 0,
      ...options,
    });
    return { ...result, visionMs };
  }

  async release(): Promise<void> {
    await this.vision.release();
    await this.decoder.release();
  }

  private prompt(inputs: GraniteInputs): GranitePrompt {
    const ids = inputs.input_ids;
    if (ids.dtype !== 'int64' || ids.dims.length !== 2)
      throw new ModelError('BAD_INPUT', `input_ids must be int64 [B, S], got ${ids.dtype} [${ids.dims.join(', ')}]`);
    const [B, S] = ids.dims as [number, number];
    const data = ids.data as BigInt64Array;
    const mask = inputs.attention_mask ? (inputs.attention_mask.data as BigInt64Array) : new BigInt64Array(B * S).fill(1n);
    if (mask.length !== B * S) throw new ModelError('BAD_INPUT', `attention_mask must be [${B}, ${S}]`);
    const imagePositions: number[] = [];
    const image = BigInt(this.config.imageTokenId);
    data.forEach((v, i) => {
      if (v === image) imagePositions.push(i);
    });
    let positions: BigInt64Array;
    if (inputs.position_ids) {
      positions = inputs.position_ids.data as BigInt64Array;
    } else {
      // HF generate: cumsum(mask) - 1, padded columns set to 1.
      positions = new BigInt64Array(B * S);
      for (let b = 0; b < B; b++) {
        let n = 0n;
        for (let s = 0; s < S; s++) {
          const i = b * S + s;
          if (mask[i] === 1n) positions[i] = n++;
          else positions[i] = 1n;
        }
      }
    }
    const realTokens = Array.from({ length: B }, (_, b) => mask.subarray(b * S, (b + 1) * S).reduce((a, v) => a + Number(v), 0));
    return { batch: B, seq: S, inputIds: data, mask, positions, imagePositions, realTokens, imageSizes: imageSizes(inputs.image_sizes) };
  }

  private async encodeVision(inputs: GraniteInputs, placeholders: number): Promise<HostTensor<'float32'>[]> {
    const D = this.text.hiddenSize;
    const sizes = imageSizes(inputs.image_sizes);
    if (sizes.length === 0 || !inputs.pixel_values) {
      if (placeholders > 0)
        throw new ModelError(
          'PLACEHOLDER_MISMATCH',
          `the prompt has ${placeholders} image tokens (id ${this.config.imageTokenId}) but no pixel_values / image_sizes were given`,
        );
      return this.config.levels.map(() => float32(new Float32Array(0), [0, D]));
    }
    const { feeds, plan } = graniteVisionFeeds(inputs.pixel_values, sizes, this.config);
    const features = plan.indices.length;
    if (features !== placeholders) {
      throw new ModelError(
        'PLACEHOLDER_MISMATCH',
        `Image features and image tokens do not match: the prompt has ${placeholders} image tokens (id ${this.config.imageTokenId}) but the images (sizes ${sizes.map((s) => s.join('x')).join(', ')}) pack into ${features} features (${plan.tokensPerImage.join(' + ')}). Build the prompt with the processor's token count per image.`,
      );
    }
    const out = await this.vision.run(feeds);
    return this.config.levels.map((l) => out[`deepstack_${l.k}`] as HostTensor<'float32'>);
  }

  private newCache(batch: number): KvCache {
    const t = this.text;
    return new KvCache({ numLayers: t.numHiddenLayers, numKvHeads: t.numKeyValueHeads, headDim: t.headDim, batchSize: batch });
  }

  private prefillFeeds(p: GranitePrompt, deepstack: readonly HostTensor[], cache: KvCache): Record<string, HostTensor> {
    const feeds: Record<string, HostTensor> = {
      input_ids: int64(p.inputIds, [p.batch, p.seq]),
      image_positions: int64(p.imagePositions, [p.imagePositions.length]),
      attention_mask: int64(p.mask, [p.batch, p.seq]),
      position_ids: int64(p.positions, [p.batch, p.seq]),
      ...cache.feeds(),
    };
    deepstack.forEach((t, k) => {
      feeds[`deepstack_${k}`] = t;
    });
    return feeds;
  }

  private decodeSteps(p: GranitePrompt, deepstack: readonly HostTensor[]): DecodeSteps {
    const B = p.batch;
    const V = this.text.vocabSize;
    const D = this.text.hiddenSize;
    const cache = this.newCache(B);
    const real = [...p.realTokens];
    const mask = new GrowingMask(p.mask, B, p.seq);
    return {
      batchSize: B,
      vocabSize: V,
      prefill: async () => {
        const out = await this.decoder.run(this.prefillFeeds(p, deepstack, cache));
        cache.update(out);
        return lastPositionLogits(out.logits!, B, p.seq, V);
      },
      step: async (tokens) => {
        const positions = real.map((n) => n);
        real.forEach((_, b) => {
          real[b]!++;
        });
        const feeds: Record<string, HostTensor> = {
          input_ids: int64(tokens, [B, 1]),
          image_positions: int64([], [0]),
          attention_mask: mask.next(),
          position_ids: int64(positions, [B, 1]),
          ...cache.feeds(),
        };
        this.config.levels.forEach((l) => {
          feeds[`deepstack_${l.k}`] = float32(new Float32Array(0), [0, D]);
        });
        const out = await this.decoder.run(feeds);
        cache.update(out);
        return lastPositionLogits(out.logits!, B, 1, V);
      },
    };
  }
}

interface GranitePrompt {
  batch: number;
  seq: number;
  inputIds: BigInt64Array;
  mask: BigInt64Array;
  positions: BigInt64Array;
  imagePositions: number[];
  realTokens: number[];
  imageSizes: Size[];
}

function imageSizes(t: HostTensor | undefined): Size[] {
  if (!t) return [];
  if (t.dtype !== 'int64' || t.dims.length !== 2 || t.dims[1] !== 2)
    throw new ModelError('BAD_INPUT', `image_sizes must be int64 [N, 2], got ${t.dtype} [${t.dims.join(', ')}]`);
  const d = t.data as BigInt64Array;
  return Array.from({ length: t.dims[0]! }, (_, i) => [Number(d[2 * i]), Number(d[2 * i + 1])] as const);
}
