import { Template } from '@huggingface/jinja';
import { ProcessorError } from '../errors.js';

/**
 * A content part of a message, as HF processors take them: `{ type: 'text', text }`, or a media slot
 * (`{ type: 'image' }`, `{ type: 'video' }`) the template turns into a placeholder; `image` / `url` /
 * `path` name the media when the processor should load it.
 */
export interface ContentPart {
  type: 'text' | 'image' | 'video' | (string & {});
  text?: string;
  image?: unknown;
  url?: unknown;
  path?: unknown;
  video?: unknown;
  [key: string]: unknown;
}

/** A chat message: `content` is a string or a list of parts (`{ type: 'image' }`, `{ type: 'text', text }`). */
export interface ChatMessage {
  role: string;
  content: string | ContentPart[];
  [key: string]: unknown;
}

export interface ApplyChatTemplateOptions {
  /** End with the header that starts the assistant's turn (HF `add_generation_prompt`). Default false, as HF. */
  addGenerationPrompt?: boolean;
  /**
   * Leave the last message open so the model continues it (HF `continue_final_message`); not with
   * addGenerationPrompt.
   */
  continueFinalMessage?: boolean;
  /** JSON schemas of tools, for templates that render them (HF `tools`). */
  tools?: readonly Record<string, unknown>[];
  /** Documents for retrieval-augmented templates (HF `documents`). */
  documents?: readonly Record<string, unknown>[];
  /** Further template variables (HF's `**kwargs`: e.g. `enable_thinking`); they override the special tokens. */
  variables?: Record<string, unknown>;
}

/** The marker HF appends to the final message to find where it ends (chat_template_utils.render_jinja_template). */
const CONTINUE_TAG = 'CONTINUE_FINAL_MESSAGE_TAG ';

/**
 * A chat template (Jinja) rendered with @huggingface/jinja, with the variables transformers 5.17's
 * `apply_chat_template` gives it: `messages`, `tools`, `documents` (None when not given),
 * `add_generation_prompt`, the tokenizer's special tokens map (`bos_token`, `eos_token`, and the
 * model's own such as `image_token`), then the caller's variables. @huggingface/jinja trims blocks as
 * HF's environment does (trim_blocks, lstrip_blocks) and provides `raise_exception` and `strftime_now`.
 */
export class ChatTemplate {
  readonly #template: Template;

  constructor(
    readonly source: string,
    readonly specialTokens: Readonly<Record<string, string>> = {},
  ) {
    try {
      this.#template = new Template(source);
    } catch (e) {
      throw new ProcessorError('TOKENIZER_ERROR', `the chat template does not parse: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Renders a conversation to the prompt text (HF `apply_chat_template(..., tokenize=False)`). */
  apply(messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
    if (options.continueFinalMessage && options.addGenerationPrompt) {
      throw new ProcessorError('INVALID_INPUT', 'continueFinalMessage and addGenerationPrompt cannot be used together');
    }
    let chat = messages;
    let finalText: string | undefined;
    if (options.continueFinalMessage) ({ chat, finalText } = markFinalMessage(messages));
    let rendered: string;
    try {
      rendered = this.#template.render({
        ...this.specialTokens,
        messages: chat,
        tools: options.tools ?? null,
        documents: options.documents ?? null,
        add_generation_prompt: options.addGenerationPrompt ?? false,
        ...options.variables,
      });
    } catch (e) {
      throw new ProcessorError('TOKENIZER_ERROR', `the chat template failed: ${(e as Error).message}`, { cause: e });
    }
    return finalText === undefined ? rendered : cutAtFinalMessage(rendered, finalText);
  }
}

/** HF render_jinja_template: the last text of the final message gets a marker appended. */
function markFinalMessage(messages: readonly ChatMessage[]): { chat: ChatMessage[]; finalText: string } {
  const original = messages.at(-1);
  if (original === undefined) throw new ProcessorError('INVALID_INPUT', 'continueFinalMessage needs at least one message');
  // Copies of the last message and its parts only: the caller's messages (and any image objects in them) stay as they are.
  const last: ChatMessage = {
    ...original,
    content: typeof original.content === 'string' ? original.content : original.content.map((p) => ({ ...p })),
  };
  const chat = [...messages.slice(0, -1), last];
  if (typeof last.content === 'string') {
    const finalText = last.content;
    last.content += CONTINUE_TAG;
    return { chat, finalText };
  }
  for (let i = last.content.length - 1; i >= 0; i--) {
    const part = last.content[i]!;
    if (typeof part.text === 'string') {
      const finalText = part.text;
      part.text += CONTINUE_TAG;
      return { chat, finalText };
    }
  }
  throw new ProcessorError('INVALID_INPUT', 'continueFinalMessage is set but the final message has no text to continue');
}

/** HF render_jinja_template: cut the prompt where the marker is, keeping the template's spacing when it kept it. */
function cutAtFinalMessage(rendered: string, finalText: string): string {
  const tag = CONTINUE_TAG.trim();
  if (!rendered.includes(finalText.trim()) || !rendered.includes(tag)) {
    throw new ProcessorError(
      'INVALID_INPUT',
      'continueFinalMessage is set but the chat template does not render the final message as given',
    );
  }
  const at = rendered.lastIndexOf(tag);
  return rendered.startsWith(CONTINUE_TAG, at) ? rendered.slice(0, at) : rendered.slice(0, at).trimEnd();
}
