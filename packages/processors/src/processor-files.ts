// Which processor folder files HF 5.17 reads and which one wins (AutoProcessor, ProcessorMixin): the chat
// template's source, nested settings against their files, and settings errors named by file.
import { ConfigError } from '@vlmkit/config';
import { ProcessorError, type SettingsSource } from './errors.js';
import { listFolder, type ModelFiles, readJsonObject, readProcessorFile } from './model-files.js';

/**
 * The processor's chat template as HF ProcessorMixin.get_processor_dict finds it: processor_config.json
 * `chat_template`, else chat_template.json (legacy), else chat_template.jinja; files that are not
 * regular files count as absent. HF's processor never falls back to tokenizer_config.json's template.
 */
export async function chatTemplateSource(files: ModelFiles, processorConfig: Record<string, unknown>): Promise<string | undefined> {
  // HF reads an empty template as none at all: apply_chat_template then raises that there is no template.
  const source = await chatTemplateFound(files, processorConfig);
  return source === '' ? undefined : source;
}

async function chatTemplateFound(files: ModelFiles, processorConfig: Record<string, unknown>): Promise<string | undefined> {
  const inConfig = processorConfig.chat_template;
  if (inConfig !== undefined && inConfig !== null) return templateText(inConfig, 'processor_config.json chat_template');
  const json = await readJsonObject(files, 'chat_template.json', 'TOKENIZER_ERROR');
  if (json !== undefined) {
    if (await hasNamedTemplates(files)) {
      throw new ProcessorError(
        'TOKENIZER_ERROR',
        `${files.root}: both chat_template.json and chat_templates/*.jinja exist, which HF refuses; replace chat_template.json with chat_template.jinja.`,
      );
    }
    return templateText(json.chat_template, 'chat_template.json chat_template');
  }
  return readProcessorFile(files, 'chat_template.jinja', 'TOKENIZER_ERROR');
}

/** A template value: a string, or a dict of named templates (its "default"). */
function templateText(t: unknown, where: string): string | undefined {
  if (typeof t === 'string') return t;
  if (t !== null && typeof t === 'object' && typeof (t as Record<string, unknown>).default === 'string') {
    return (t as Record<string, string>).default;
  }
  throw new ProcessorError('TOKENIZER_ERROR', `${where} must be a template string (or named templates with a "default")`);
}

/**
 * HF lists chat_templates/ (a local folder with glob, a hub repository with its file-tree API). A source
 * that cannot list (an HTTP base URL) skips the check: such a folder then loads with chat_template.json's
 * template where HF refuses it (the one difference; README, "In the browser").
 */
async function hasNamedTemplates(files: ModelFiles): Promise<boolean> {
  try {
    return ((await listFolder(files, 'chat_templates')) ?? []).some((f) => f.endsWith('.jinja'));
  } catch {
    return false;
  }
}

/** Settings as the JSON object read and where it came from (for errors). */
export interface Settings {
  readonly json: Record<string, unknown>;
  readonly source: SettingsSource;
}

/**
 * Which settings HF's image / video processor loads (get_image_processor_dict,
 * get_video_processor_dict): the object save_pretrained nests in processor_config.json under `key`
 * when present and not null, else the first file present. Nothing is merged.
 */
export function nestedOrFile(
  processorConfig: Record<string, unknown>,
  key: string,
  files: readonly (readonly [string, Record<string, unknown> | undefined])[],
): Settings | undefined {
  const nested = processorConfig[key];
  if (nested !== undefined && nested !== null) {
    if (typeof nested !== 'object' || Array.isArray(nested)) {
      throw new ProcessorError('INVALID_PROCESSOR_CONFIG', `processor_config.json: ${key} must be a JSON object (the ${key} settings).`);
    }
    return { json: nested as Record<string, unknown>, source: { file: 'processor_config.json', key } };
  }
  for (const [file, json] of files) if (json !== undefined) return { json, source: { file } };
  return undefined;
}

/**
 * HF's Ernie4_5_VLMoeVideoProcessor.get_video_processor_dict refuses to load a folder whose video
 * settings say `"draw_on_frames": true` without the `font` file beside them.
 */
export async function checkDrawOnFramesFont(files: ModelFiles, video: Settings): Promise<void> {
  if (video.json.draw_on_frames !== true) return;
  const font = video.json.font;
  if (typeof font === 'string' && (await isRegularFile(files, font))) return;
  throw new ProcessorError(
    'INVALID_PROCESSOR_CONFIG',
    `${files.root}: ${settingsField(video.source, 'draw_on_frames')} is true but its font ${JSON.stringify(font)} is not a file in the ` +
      'folder, which HF refuses to load; set "draw_on_frames": false (vlmkit does not draw the timestamps either).',
  );
}

/** HF's cached_file(dir, font): present as a regular file (a source that refuses the name counts as absent). */
async function isRegularFile(files: ModelFiles, name: string): Promise<boolean> {
  try {
    const source = await files.open(name);
    await source?.close();
    return source !== undefined;
  } catch {
    return false;
  }
}

/** Runs a settings reader, its ConfigError (which names the file and field) as a ProcessorError. */
export function readSettings<T>(dir: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof ConfigError) throw new ProcessorError('INVALID_PROCESSOR_CONFIG', `${dir}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** `file field` or, nested, `processor_config.json image_processor.field`. */
export function settingsField(source: SettingsSource, field: string): string {
  return source.key === undefined ? `${source.file} ${field}` : `${source.file} ${source.key}.${field}`;
}
