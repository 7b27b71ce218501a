import { Template } from '@huggingface/jinja';
import { ProcessorError } from '../errors.js';
import { DEFAULT_TEMPLATE_LIMITS, limitError, renderTemplate, type TemplateLimits, TemplateRaisedError } from './template-runtime.js';

export { DEFAULT_TEMPLATE_LIMITS, type TemplateLimits } from './template-runtime.js';

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
  /** Render limits for this call, over the template's own (see ChatTemplateOptions.limits). */
  limits?: Partial<TemplateLimits>;
}

export interface ChatTemplateOptions {
  /**
   * Bounds on one render: `maxRenderMs` (default 2000), `maxOutputLength` (default 4 Mi characters:
   * the prompt and any string the template builds), `maxIterations` (default 10^6 loop iterations,
   * and items in any list the template builds). Past one, apply throws ProcessorError TEMPLATE_LIMIT.
   */
  limits?: Partial<TemplateLimits>;
}

/** The marker HF appends to the final message to find where it ends (chat_template_utils.render_jinja_template). */
const CONTINUE_TAG = 'CONTINUE_FINAL_MESSAGE_TAG ';

/**
 * A chat template (Jinja) rendered with @huggingface/jinja, with the variables transformers 5.17's
 * `apply_chat_template` gives it: `messages`, `tools`, `documents` (None when not given),
 * `add_generation_prompt`, the tokenizer's special tokens map (`bos_token`, `eos_token`, and the
 * model's own such as `image_token`), then the caller's variables. @huggingface/jinja parses and trims
 * blocks as HF's environment does (trim_blocks, lstrip_blocks); template-runtime.ts renders with
 * jinja2's meaning of undefined values and printing, `raise_exception` and `strftime_now`, within
 * limits on time, output and iterations, so a hostile template fails by name instead of hanging.
 * Messages are checked first: a malformed one is refused naming its index and field.
 */
export class ChatTemplate {
  readonly #template: Template;
  readonly limits: Readonly<TemplateLimits>;

  constructor(
    readonly source: string,
    readonly specialTokens: Readonly<Record<string, string>> = {},
    options: ChatTemplateOptions = {},
  ) {
    this.limits = resolveLimits(DEFAULT_TEMPLATE_LIMITS, options.limits, 'ChatTemplate options.limits');
    // The library's whitespace control ({%- -%}, trim_blocks) trims with JS's whitespace set, jinja2 with
    // Python's: they differ on exactly these characters, so a template holding one could render otherwise.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: these control characters are the point
    const odd = /[\ufeff\x1c-\x1f\x85]/.exec(source);
    if (odd !== null) {
      const cp = `U+${odd[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `the chat template holds ${cp}${cp === 'U+FEFF' ? ' (a byte-order mark)' : ''} at character ${odd.index}, which jinja2 and ` +
          "vlmkit's template engine trim differently; remove it from the template (re-save the file as UTF-8 without a BOM).",
      );
    }
    try {
      this.#template = new Template(source);
    } catch (e) {
      if (isStackOverflow(e)) throw limitError('parsing', 0, this.limits, e);
      throw new ProcessorError('TOKENIZER_ERROR', `the chat template does not parse: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Renders a conversation to the prompt text (HF `apply_chat_template(..., tokenize=False)`). */
  apply(messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
    if (options.continueFinalMessage && options.addGenerationPrompt) {
      throw new ProcessorError('INVALID_INPUT', 'continueFinalMessage and addGenerationPrompt cannot be used together');
    }
    const limits = resolveLimits(this.limits, options.limits, 'applyChatTemplate options.limits');
    checkMessages(messages);
    let chat = messages;
    let finalText: string | undefined;
    if (options.continueFinalMessage) ({ chat, finalText } = markFinalMessage(messages));
    const variables = templateValues(
      {
        ...this.specialTokens,
        messages: chat,
        tools: options.tools ?? null,
        documents: options.documents ?? null,
        add_generation_prompt: options.addGenerationPrompt ?? false,
        ...options.variables,
      },
      '',
      [],
    ) as Record<string, unknown>;
    let rendered: string;
    try {
      rendered = renderTemplate(this.#template, variables, limits);
    } catch (e) {
      if (e instanceof ProcessorError) throw e;
      if (e instanceof TemplateRaisedError) {
        throw new ProcessorError('TOKENIZER_ERROR', `the chat template raised an error: ${e.message}`, { cause: e });
      }
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

function isStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /call stack/i.test(e.message);
}

function resolveLimits(base: Readonly<TemplateLimits>, given: Partial<TemplateLimits> | undefined, where: string): TemplateLimits {
  const limits = { ...base };
  for (const [key, value] of Object.entries(given ?? {})) {
    if (!(key in base)) {
      throw new ProcessorError('INVALID_INPUT', `${where}.${key} is not a template limit; use ${Object.keys(base).join(', ')}`);
    }
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value > 0)) {
      throw new ProcessorError('INVALID_INPUT', `${where}.${key} must be a positive number; got ${String(value)}`);
    }
    limits[key as keyof TemplateLimits] = value;
  }
  return limits;
}

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v);

/**
 * Refuses messages the templates cannot be trusted with, naming the message and field: HF passes
 * any dict to the template, where a missing role silently drops the message and a number prints
 * differently in JavaScript; a null content, a message that is not a dict or a part without a
 * type make HF's processor or template raise.
 */
function checkMessages(messages: readonly ChatMessage[]): void {
  if (!Array.isArray(messages)) {
    throw new ProcessorError('INVALID_INPUT', `messages must be a list of { role, content } messages; got ${typeName(messages)}`);
  }
  messages.forEach((m: unknown, i) => {
    const where = `message ${i}`;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw new ProcessorError('INVALID_INPUT', `${where} must be an object { role, content }; got ${typeName(m)}`);
    }
    const { role, content } = m as Record<string, unknown>;
    if (typeof role !== 'string') {
      throw new ProcessorError('INVALID_INPUT', `${where}: role must be a string; got ${role === undefined ? 'none' : typeName(role)}`);
    }
    if (typeof content === 'string') return;
    if (!Array.isArray(content)) {
      throw new ProcessorError(
        'INVALID_INPUT',
        `${where}: content must be a string or a list of parts ({ type: 'text', text } / { type: 'image' }); got ${content === undefined ? 'none' : typeName(content)}`,
      );
    }
    content.forEach((part: unknown, j) => {
      const at = `${where}, content part ${j}`;
      if (part === null || typeof part !== 'object' || Array.isArray(part)) {
        throw new ProcessorError('INVALID_INPUT', `${at} must be an object with a \`type\`; got ${typeName(part)}`);
      }
      const { type, text } = part as Record<string, unknown>;
      if (typeof type !== 'string') {
        throw new ProcessorError(
          'INVALID_INPUT',
          `${at}: type must be a string ('text', 'image', 'video'); got ${type === undefined ? 'none' : typeName(type)}`,
        );
      }
      if (type === 'text' && typeof text !== 'string') {
        throw new ProcessorError(
          'INVALID_INPUT',
          `${at}: a text part's text must be a string; got ${text === undefined ? 'none' : typeName(text)}`,
        );
      }
    });
  });
}

/** Deeper values would overflow the stack of the library's value conversion. */
const MAX_VALUE_DEPTH = 1000;

/**
 * The values as the template sees them: plain data copied as is; bytes and other class instances
 * (a decoded image in an image part) as a short stand-in, which the template only ever tests for
 * presence, instead of one template value per byte.
 */
function templateValues(value: unknown, path: string, parents: object[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (parents.includes(value)) throw new ProcessorError('INVALID_INPUT', `${path || 'a template variable'} refers to itself (a cycle)`);
  if (parents.length > MAX_VALUE_DEPTH) {
    throw new ProcessorError('INVALID_INPUT', `${path.slice(0, 200)}... nests more than ${MAX_VALUE_DEPTH} objects or lists deep`);
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return `<${value.constructor.name}>`;
  const inner = [...parents, value];
  if (Array.isArray(value)) return value.map((v, i) => templateValues(v, `${path}[${i}]`, inner));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return `<${value.constructor?.name ?? 'object'}>`;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateValues(v, path ? `${path}.${k}` : k, inner)]));
}
