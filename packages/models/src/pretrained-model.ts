// The public face of every loaded model (`PretrainedModel`: what the CLI and apps call), implemented once by
// `FamilyModel`, the base of each family's model class: chat on the directory's processor, the prompt checked
// against max_position_embeddings, HF-named forward outputs.

import { DECODER_STEP_IO } from '@vlmkit/moe-decoder';
import { type ChatMessage, Processor, type ProcessorFamily } from '@vlmkit/processors';
import type { HostTensor } from '@vlmkit/runtime';
import { warn } from '#platform';
import { type ChatOptions, type ChatStream, chat } from './chat.js';
import type { PromptBatch } from './decode-state.js';
import { type BatchDecoder, type DecoderDims, type DecoderIo, DecoderModel } from './decoder-model.js';
import type { GenerateResult } from './generate.js';
import type { GenerationTokens } from './generation-tokens.js';
import type { ModelGenerateOptions } from './graph-loop.js';
import { checkPromptLength, pastMaxPositions } from './inputs-check.js';
import type { LoadedSessions } from './model-load.js';
import type { CheckpointSource } from './model-source.js';

/** Tensors by their HF names: forward's kwargs, or its outputs. */
export type NamedTensors = Record<string, HostTensor>;

/** What every assembled model offers, by HF input and output names (the CLI's contract). */
export interface PretrainedModel {
  /** Its family's config.json model_type (HF's name). */
  readonly modelType: string;
  readonly device: string;
  readonly deviceReason: string;
  readonly timings: { loadMs: number; buildMs: number; sessionMs: number };
  /** The ids generation stops on by default (generation_config.json's, else config.json's, as HF generate reads them). */
  readonly eos: readonly number[];
  /** HF forward kwargs in; float32 `logits` [B,S,V] and the family's extras out (its `forwardOutputs`). */
  forwardNamed(inputs: NamedTensors): Promise<NamedTensors>;
  generate(inputs: NamedTensors, options: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }>;
  /**
   * Streams the answer to a conversation (see ./chat.ts): the processor (`options.processor`, else the
   * model directory's) makes the inputs, eos defaults to generation_config.json's (HF generate's), else
   * config.json's.
   */
  chat(messages: readonly ChatMessage[], options: ModelChatOptions): ChatStream;
  /** The model directory's processor (tokenizer, chat template, image/video processors), loaded on first use. */
  processor(): Promise<Processor>;
  release(): Promise<void>;
}

export interface ModelChatOptions extends ChatOptions {
  /** The processor that makes the inputs, when the caller has loaded it already; default `processor()`. */
  processor?: Processor | undefined;
}

/** What the base reads from a family's config: the decoder's sizes and the generation tokens. */
export interface FamilyModelConfig {
  readonly text: DecoderDims;
  readonly tokens: GenerationTokens;
}

/** What a family's load tells its model besides the sessions. */
export interface ModelOrigin {
  /** The checkpoint as the caller named it (a directory's path, or its files): the processor is read from it (its errors name it so). */
  readonly dir: CheckpointSource;
  readonly modelType: string;
  /** The family's processor rules (`ModelFamily.processor`). */
  readonly processor: ProcessorFamily;
  /** config.json's max_position_embeddings, when it states one. */
  readonly maxPositions: number | undefined;
}

/**
 * The base of each family's model class. Its inputs are HF kwargs by name (a family's own input type, checked
 * by name when read: `checkNamedInputs`), so the model is a `PretrainedModel` as it is.
 */
export abstract class FamilyModel<Config extends FamilyModelConfig, Inputs extends NamedTensors, Prompt extends PromptBatch, Vision>
  extends DecoderModel<Inputs, Prompt, Vision>
  implements PretrainedModel
{
  readonly modelType: string;
  protected readonly dims: DecoderDims;
  protected readonly io: DecoderIo = DECODER_STEP_IO;
  protected readonly tokens: GenerationTokens;
  private readonly origin: ModelOrigin;
  private loadingProcessor: Promise<Processor> | undefined;

  /** A family's `fromPretrained` makes its model from `loadFamily`'s result. */
  protected constructor(
    readonly config: Config,
    loaded: LoadedSessions,
    origin: ModelOrigin,
  ) {
    super(loaded);
    this.dims = config.text;
    this.tokens = config.tokens;
    this.origin = origin;
    this.modelType = origin.modelType;
  }

  get eos(): readonly number[] {
    return this.tokens.eos;
  }

  /**
   * One prefill of the whole prompt on an empty cache: float32 logits [B, S, V] at every position, with the
   * prompt and the vision outputs it read (each family's `forward` returns these and its extras).
   */
  protected async prefillAll(inputs: Inputs): Promise<{ prompt: Prompt; vision: Vision; logits: HostTensor<'float32'> }> {
    if (this.loop !== 'host') this.loopUnavailable('forward');
    const prompt = this.prompt(inputs);
    const vision = await this.encodeVision(inputs, prompt);
    const feeds = this.keepLogits(this.prefillFeeds(prompt, vision, this.newCache(prompt.batch)), 0);
    const out = await this.decoder.run(feeds, { outputs: [this.io.logits] });
    return { prompt, vision, logits: out[this.io.logits] as HostTensor<'float32'> };
  }

  /** HF-named outputs of one forward (`forward`'s, under the family's `forwardOutputs` names). */
  protected abstract namedForward(inputs: Inputs): Promise<NamedTensors>;

  /** Refuses a prompt longer than max_position_embeddings (PROMPT_TOO_LONG) before anything runs. */
  async forwardNamed(inputs: Inputs): Promise<NamedTensors> {
    checkPromptLength(promptLength(inputs), this.origin.maxPositions);
    return this.namedForward(inputs);
  }

  /**
   * As DecoderModel's, with the prompt refused when longer than max_position_embeddings (PROMPT_TOO_LONG) and a
   * process warning (VlmkitWarning, code PAST_MAX_POSITION_EMBEDDINGS) when a token was predicted from more
   * positions than that (./inputs-check.ts).
   */
  override async generate(inputs: Inputs, options: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }> {
    const max = this.origin.maxPositions;
    checkPromptLength(promptLength(inputs), max);
    const r = await super.generate(inputs, options);
    const steps = Math.max(0, ...r.tokens.map((t) => t.length));
    warnPastMaxPositions(promptLength(inputs) + steps - 1, max);
    return r;
  }

  /**
   * As DecoderModel's, with max_position_embeddings held per request: a longer prompt is refused (PROMPT_TOO_LONG);
   * generation stops where the next token would be predicted from more positions than that (a server's
   * request must not grow the shared KV cache without bound; generate instead warns and goes on, as HF does).
   */
  override batchDecoder(): BatchDecoder {
    const d = super.batchDecoder();
    const max = this.origin.maxPositions;
    return {
      ...d,
      request: (inputs) => {
        checkPromptLength(promptLength(inputs), max);
        const r = d.request(inputs);
        return max === undefined ? r : { ...r, maxNewTokens: max - r.seq + 1 };
      },
    };
  }

  processor(): Promise<Processor> {
    this.loadingProcessor ??= Processor.fromPretrained(this.origin.dir, this.origin.processor);
    return this.loadingProcessor;
  }

  chat(messages: readonly ChatMessage[], options: ModelChatOptions): ChatStream {
    return chatWith(this, messages, options);
  }
}

/** chat() on the processor given, else the model's; eos is the model's (generation_config.json, else config.json). */
function chatWith(model: PretrainedModel, messages: readonly ChatMessage[], { processor, ...options }: ModelChatOptions): ChatStream {
  const chatModel = { device: model.device, generate: model.generate.bind(model), eos: async () => model.eos };
  return chat(chatModel, processor ?? model.processor(), messages, options);
}

/** A process warning (VlmkitWarning, PAST_MAX_POSITION_EMBEDDINGS) when a token was predicted from more positions than `max`. */
function warnPastMaxPositions(context: number, max: number | undefined): void {
  const warning = pastMaxPositions(context, max);
  if (warning) warn(warning, 'PAST_MAX_POSITION_EMBEDDINGS');
}

/** input_ids' length (padding included, as generation counts it); 0 when missing (refused when read). */
function promptLength(inputs: NamedTensors): number {
  return inputs.input_ids?.dims[1] ?? 0;
}
