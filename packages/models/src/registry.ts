import { type ChatMessage, Processor } from '@vlmkit/processors';
import type { HostTensor } from '@vlmkit/runtime';
import { type ChatModel, type ChatOptions, type ChatStream, chat } from './chat.js';
import { MODEL_TYPES, type ModelType, modelType, readConfigFile } from './config-file.js';
import { Ernie45VL, type ErnieLoadOptions } from './ernie/model.js';
import { ModelError } from './errors.js';
import type { GenerateResult } from './generate.js';
import type { GenerationTokens } from './generation-tokens.js';
import { Granite4Vision, type GraniteLoadOptions } from './granite/model.js';
import { GRANITE_VISION_ENCODER_IO } from './granite/vision-encoder.js';
import type { ModelGenerateOptions } from './graph-loop.js';
import { checkPromptLength, maxPositionEmbeddings, pastMaxPositions } from './inputs-check.js';

/** Names of ERNIE-4.5-VL's `forwardNamed` outputs (what `vlmkit forward` writes). */
export const ERNIE_FORWARD_OUTPUTS = {
  logits: 'logits',
  positionIds: 'position_ids',
  imageEmbeds: 'image_embeds',
  videoEmbeds: 'video_embeds',
} as const;

/** Names of Granite 4 Vision's `forwardNamed` outputs: level k is named as the vision encoder's output. */
export const GRANITE_FORWARD_OUTPUTS = {
  logits: 'logits',
  deepstack: GRANITE_VISION_ENCODER_IO.deepstack,
} as const;

/** What every assembled model offers, by HF input and output names (the CLI's contract). */
export interface PretrainedModel {
  readonly modelType: string;
  readonly device: string;
  readonly deviceReason: string;
  readonly timings: { loadMs: number; buildMs: number; sessionMs: number };
  /** The ids generation stops on by default (generation_config.json's, else config.json's, as HF generate reads them). */
  readonly eos: readonly number[];
  /** HF forward kwargs in; float32 `logits` [B,S,V] and model-specific extras out. */
  forwardNamed(inputs: Record<string, HostTensor>): Promise<Record<string, HostTensor>>;
  generate(inputs: Record<string, HostTensor>, options: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }>;
  /**
   * Streams the answer to a conversation (see ./chat.ts): the model directory's processor makes the
   * inputs, eos defaults to generation_config.json's (HF generate's), else config.json's.
   */
  chat(messages: readonly ChatMessage[], options: ChatOptions): ChatStream;
  /** The model directory's processor (tokenizer, chat template, image/video processors), loaded on first use. */
  processor(): Promise<Processor>;
  release(): Promise<void>;
}

/** A model before the directory's processor is attached. */
type LoadedModel = Omit<PretrainedModel, 'chat' | 'processor'>;

export type LoadOptions = ErnieLoadOptions & GraniteLoadOptions;

const LOADERS: Record<ModelType, (dir: string, o: LoadOptions) => Promise<LoadedModel>> = {
  ernie4_5_vl_moe: async (dir, o) => {
    if (o.adapter) throw new ModelError('BAD_INPUT', 'LoRA adapters are supported for Granite 4 Vision only');
    return ernieAdapter(await Ernie45VL.fromPretrained(dir, o));
  },
  granite4_vision: async (dir, o) => graniteAdapter(await Granite4Vision.fromPretrained(dir, o)),
};

export function supportedModelTypes(): string[] {
  return [...MODEL_TYPES].sort();
}

/** Opens a checkpoint directory with the model its config.json names. */
export async function loadPretrained(dir: string, options: LoadOptions = {}): Promise<PretrainedModel> {
  const file = await readConfigFile(dir);
  const loader = LOADERS[modelType(file)];
  return withChat(withMaxPositions(await loader(dir, options), maxPositionEmbeddings(file.json)), dir);
}

/**
 * forwardNamed and generate (and so chat) refuse a prompt longer than the config's max_position_embeddings
 * (PROMPT_TOO_LONG) before anything runs; generate emits a process warning (VlmkitWarning, code
 * PAST_MAX_POSITION_EMBEDDINGS) when a token was predicted from more positions than that (./inputs-check.ts).
 */
function withMaxPositions(m: LoadedModel, max: number | undefined): LoadedModel {
  if (max === undefined) return m;
  const promptLength = (inputs: Record<string, HostTensor>) => checkPromptLength(inputs.input_ids?.dims[1] ?? 0, max);
  const forwardNamed: LoadedModel['forwardNamed'] = async (inputs) => {
    promptLength(inputs);
    return m.forwardNamed(inputs);
  };
  const generate: LoadedModel['generate'] = async (inputs, o) => {
    promptLength(inputs);
    const r = await m.generate(inputs, o);
    const steps = Math.max(0, ...r.tokens.map((t) => t.length));
    const warning = pastMaxPositions((inputs.input_ids?.dims[1] ?? 0) + steps - 1, max);
    if (warning) process.emitWarning(warning, { type: 'VlmkitWarning', code: 'PAST_MAX_POSITION_EMBEDDINGS' });
    return r;
  };
  // The spread reads the device getters once, as withChat's: the device never changes after load.
  return { ...m, forwardNamed, generate };
}

/** Adds chat() on the directory's processor; eos is the model's (generation_config.json, else config.json). */
function withChat(m: LoadedModel, dir: string): PretrainedModel {
  let processor: Promise<Processor> | undefined;
  const model: PretrainedModel = {
    // The spread reads the device getters once: the device never changes after load.
    ...m,
    processor: () => {
      processor ??= Processor.fromPretrained(dir);
      return processor;
    },
    chat: (messages, options) => {
      const chatModel: ChatModel = {
        device: m.device,
        generate: (inputs, o) => m.generate(inputs, o),
        eos: async () => m.eos,
      };
      return chat(chatModel, model.processor(), messages, options);
    },
  };
  return model;
}

interface Assembled<I> {
  readonly device: string;
  readonly deviceReason: string;
  readonly timings: PretrainedModel['timings'];
  readonly config: { readonly tokens: GenerationTokens };
  generate(inputs: I, o: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }>;
  release(): Promise<void>;
}

/** The shared face of an assembled model; `named` turns its forward outputs into HF-named tensors. */
function adapt<I>(modelType: string, m: Assembled<I>, named: (inputs: I) => Promise<Record<string, HostTensor>>): LoadedModel {
  return {
    modelType,
    get device() {
      return m.device;
    },
    get deviceReason() {
      return m.deviceReason;
    },
    timings: m.timings,
    eos: m.config.tokens.eos,
    forwardNamed: (inputs) => named(inputs as I),
    generate: (inputs, o) => m.generate(inputs as I, o),
    release: () => m.release(),
  };
}

function ernieAdapter(m: Ernie45VL): LoadedModel {
  return adapt('ernie4_5_vl_moe', m, async (inputs) => {
    const out = await m.forward(inputs);
    const names = ERNIE_FORWARD_OUTPUTS;
    const named: Record<string, HostTensor> = { [names.logits]: out.logits, [names.positionIds]: out.positionIds };
    if (out.imageEmbeds) named[names.imageEmbeds] = out.imageEmbeds;
    if (out.videoEmbeds) named[names.videoEmbeds] = out.videoEmbeds;
    return named;
  });
}

function graniteAdapter(m: Granite4Vision): LoadedModel {
  return adapt('granite4_vision', m, async (inputs) => {
    const out = await m.forward(inputs);
    const named: Record<string, HostTensor> = { [GRANITE_FORWARD_OUTPUTS.logits]: out.logits };
    out.deepstack.forEach((t, k) => {
      named[GRANITE_FORWARD_OUTPUTS.deepstack(k)] = t;
    });
    return named;
  });
}
