// The demo page: a checkpoint (a picked folder or a URL), an image and a question; the model is built in the
// page from the checkpoint's safetensors (progress shown), then the answer streams in with its tokens/s.
import type { PretrainedModel } from '@vlmkit/models';
import type { ModelFiles } from '@vlmkit/safetensors';
import { filesFromFolder, filesFromUrl, loadModel, progressLine, type WebDevice } from './model.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>('form');
const folder = $<HTMLInputElement>('folder');
const url = $<HTMLInputElement>('url');
const image = $<HTMLInputElement>('image');
const preview = $<HTMLImageElement>('preview');
const question = $<HTMLInputElement>('question');
const maxTokens = $<HTMLInputElement>('max-tokens');
const device = $<HTMLSelectElement>('device');
const ask = $<HTMLButtonElement>('ask');
const stop = $<HTMLButtonElement>('stop');
const progress = $<HTMLProgressElement>('progress');
const status = $<HTMLParagraphElement>('status');
const answer = $<HTMLPreElement>('answer');
const stats = $<HTMLParagraphElement>('stats');

/** The loaded model and what it was loaded from: asking again about the same checkpoint reuses it. */
let loaded: { key: string; model: PretrainedModel } | undefined;
let abort: AbortController | undefined;

image.addEventListener('change', () => {
  const file = image.files?.[0];
  if (preview.src) URL.revokeObjectURL(preview.src);
  preview.hidden = !file;
  if (file) preview.src = URL.createObjectURL(file);
});

/** The chosen checkpoint as ModelFiles, with a key that names it (folder name and size, or the URL). */
function chosenFiles(): { files: ModelFiles; key: string } {
  const source = (form.elements.namedItem('source') as RadioNodeList).value;
  if (source === 'folder') {
    const list = folder.files;
    if (!list || list.length === 0) throw new Error('Pick a checkpoint folder (config.json, *.safetensors, tokenizer files) first.');
    const files = [...list];
    const top = files[0]!.webkitRelativePath.split('/')[0] ?? files[0]!.name;
    return { files: filesFromFolder(files), key: `folder:${top}:${files.length}:${files.reduce((n, f) => n + f.size, 0)}` };
  }
  if (!url.value) throw new Error('Give the URL of a checkpoint folder first.');
  return { files: filesFromUrl(url.value), key: `url:${url.value}` };
}

async function model(files: ModelFiles, key: string): Promise<PretrainedModel> {
  const wanted = `${key}:${device.value}`;
  if (loaded?.key === wanted) return loaded.model;
  await loaded?.model.release();
  loaded = undefined;
  progress.hidden = false;
  const t = performance.now();
  const m = await loadModel(files, device.value as WebDevice, (p) => {
    const line = progressLine(p);
    progress.value = line.fraction;
    status.textContent = line.text;
  });
  progress.hidden = true;
  status.textContent = `${m.modelType} built in the page in ${((performance.now() - t) / 1000).toFixed(1)} s on ${m.device}`;
  loaded = { key: wanted, model: m };
  return m;
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void run();
});
stop.addEventListener('click', () => abort?.abort());

async function run(): Promise<void> {
  ask.disabled = true;
  stop.disabled = false;
  answer.textContent = '';
  stats.textContent = '';
  abort = new AbortController();
  try {
    const { files, key } = chosenFiles();
    const m = await model(files, key);
    const picture = image.files?.[0];
    const content = [
      ...(picture ? [{ type: 'image', image: new Uint8Array(await picture.arrayBuffer()) }] : []),
      { type: 'text', text: question.value },
    ];
    const stream = m.chat([{ role: 'user', content }], { maxNewTokens: Number(maxTokens.value), signal: abort.signal });
    for await (const piece of stream) answer.textContent += piece;
    const s = await stream.summary();
    stats.textContent =
      `${s.promptTokens} prompt tokens, ${s.newTokens} new tokens (${s.finishReason}), ` +
      `time to first token ${s.timeToFirstTokenMs.toFixed(0)} ms, ${s.tokensPerSecond.toFixed(1)} tokens/s, device ${s.device}`;
  } catch (err) {
    progress.hidden = true;
    status.textContent = err instanceof Error ? err.message : String(err);
  } finally {
    ask.disabled = false;
    stop.disabled = true;
  }
}
