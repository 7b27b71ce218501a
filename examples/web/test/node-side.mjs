// Node's results of the checks the page runs: the same check code (src/checks, compiled to dist-node/), the
// packages' Node entries (onnxruntime-node, the file system).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPretrained } from '@vlmkit/models';
import { decodeImage, Processor } from '@vlmkit/processors';
import { createSession } from '@vlmkit/runtime';
import { fileSource, SafetensorsFile } from '@vlmkit/safetensors';
import {
  FIXTURE_LOAD,
  graphCases,
  MROPE_FIXTURES,
  modelCase,
  mropePositions,
  processorCase,
  readFrames,
  readTensors,
  sha256,
  toWire,
} from '../dist-node/checks/index.js';

export async function nodeMrope(fixtures) {
  const out = [];
  for (const file of MROPE_FIXTURES) {
    out.push(...mropePositions(file, JSON.parse(await readFile(join(fixtures, 'mrope', file), 'utf8'))));
  }
  return out;
}

/** Every graph case run on onnxruntime-node's CPU EP through @vlmkit/runtime: { name, sha256, outputs }. */
export async function nodeGraphs() {
  const results = [];
  for (const c of await graphCases()) {
    const session = await createSession(c.model.bytes, { device: 'cpu', externalData: c.model.externalData, name: c.name });
    try {
      const feeds = Object.fromEntries(Object.entries(c.feeds).map(([k, f]) => [k, { dtype: 'float32', dims: f.dims, data: f.data }]));
      const out = await session.run(feeds);
      results.push({ name: c.name, sha256: await sha256(c.model.bytes), outputs: out });
    } finally {
      await session.release();
    }
  }
  return results;
}

const processors = new Map();

/** One processor case with the Node processor (the Rust tokenizer, sharp): the same media bytes as the page's. */
export async function nodeProcessorCase(fixtures, family, name) {
  const root = join(fixtures, 'processors');
  if (!processors.has(family)) processors.set(family, Processor.fromPretrained(join(root, family)));
  const c = JSON.parse(await readFile(join(root, family, 'cases', name, 'case.json'), 'utf8'));
  return processorCase(await processors.get(family), c, {
    image: async (path) => new Uint8Array(await readFile(join(root, path))),
    frames: async () => readFrames(await fileSource(join(root, 'video', 'frames.safetensors'))),
  });
}

/** Every tensor of a .safetensors file as a wire tensor (HF's expected outputs, for the report). */
export async function wireTensors(path) {
  const f = await SafetensorsFile.open(path);
  try {
    const out = {};
    for (const name of f.names()) {
      const t = await f.read(name);
      out[name] = toWire(t.data, t.shape);
    }
    return out;
  } finally {
    await f.close();
  }
}

/** Node's models, loaded from the checkpoint's path as a Node user loads them (graph cache in a temporary folder). */
export class NodeModels {
  #models = new Map();
  #cacheDir;

  async case(fixtures, model, name) {
    const dir = join(fixtures, model, 'cases', name);
    const c = JSON.parse(await readFile(join(dir, 'case.json'), 'utf8'));
    const key = `${c.checkpoint}|${c.adapter ?? ''}`;
    if (!this.#models.has(key)) {
      this.#cacheDir ??= await mkdtemp(join(tmpdir(), 'vlmkit-test-browser-'));
      const adapter = c.adapter === undefined ? {} : { adapter: join(fixtures, c.adapter) };
      this.#models.set(
        key,
        loadPretrained(join(fixtures, c.checkpoint), { device: 'cpu', cacheDir: this.#cacheDir, ...FIXTURE_LOAD, ...adapter }),
      );
    }
    const inputs = await readTensors(await fileSource(join(dir, 'inputs.safetensors')));
    return { json: c, inputs, result: await modelCase(await this.#models.get(key), inputs, c.max_new_tokens) };
  }

  async release() {
    for (const m of await Promise.allSettled(this.#models.values())) if (m.status === 'fulfilled') await m.value.release();
    this.#models.clear();
    if (this.#cacheDir) await rm(this.#cacheDir, { recursive: true, force: true });
    this.#cacheDir = undefined;
  }
}

/** One decode fixture decoded in Node (the same call as the page's, Node's decoder), or its refusal. */
export async function nodeDecodeImage(fixtures, name) {
  const bytes = new Uint8Array(await readFile(join(fixtures, 'processors', 'image-processors', 'decode', name)));
  try {
    const image = await decodeImage(bytes, { name });
    return { width: image.width, height: image.height, rgb: toWire(image.data, [image.height, image.width, 3]) };
  } catch (err) {
    return { error: err.message, code: String(err.code ?? '') };
  }
}
