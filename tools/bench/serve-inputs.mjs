// What `pnpm bench --serve` sends and serves: a copy of a checkpoint directory that `vlmkit serve` can load with
// eos off, and per request a different image (a PNG data URL) and a different text, sized to a prompt length.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { Processor } from '../../packages/processors/dist/index.js';

/** Files a serving directory takes from ERNIE's tiny fixture when the checkpoint has no processor of its own. */
const PROCESSOR_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'processor_config.json',
  'preprocessor_config.json',
  'video_preprocessor_config.json',
];

/**
 * `out`: `src`'s files linked (weights, inputs.safetensors), with what serving a bench checkpoint needs changed:
 * - generation_config.json's eos_token_id [] (every request makes max_tokens; the OpenAI API has no ignore_eos);
 * - when `src` has no tokenizer (the bench's checkpoints), ERNIE tiny's processor files, their ids being the
 *   ones torch_side.py builds with (image tokens 250-252);
 * - tokenizer.json's vocabulary filled up to the model's vocab_size with words `w<id>` (no merge makes them, so
 *   the prompt's tokens are unchanged) so that every generated id is text and streams as its own chunk;
 * - preprocessor_config.json's largest image raised to `imageSize`² pixels, kept at that size.
 */
export function serveCopy(src, out, tinyDir, imageSize) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const own = existsSync(join(src, 'tokenizer.json'));
  for (const f of readdirSync(src)) {
    if (f === 'generation_config.json' || (!own && PROCESSOR_FILES.includes(f))) continue;
    if (f.endsWith('.json') || f.endsWith('.jinja')) copyFileSync(join(src, f), join(out, f));
    else symlinkSync(resolve(src, f), join(out, f));
  }
  if (!own) for (const f of PROCESSOR_FILES) copyFileSync(join(tinyDir, f), join(out, f));
  const readJson = (f) => JSON.parse(readFileSync(join(out, f), 'utf8'));
  const gen = existsSync(join(src, 'generation_config.json')) ? JSON.parse(readFileSync(join(src, 'generation_config.json'), 'utf8')) : {};
  writeFileSync(join(out, 'generation_config.json'), JSON.stringify({ ...gen, eos_token_id: [] }, null, 2));
  const config = readJson('config.json');
  const vocabSize = (config.text_config ?? config).vocab_size;
  const tok = readJson('tokenizer.json');
  // Added tokens go into the vocabulary under their ids first: tokenizers numbers an added token that is not in it
  // from the vocabulary's size on, which the filled vocabulary would move.
  for (const t of tok.added_tokens) tok.model.vocab[t.content] ??= t.id;
  const taken = new Set(Object.values(tok.model.vocab));
  for (let id = 0; id < vocabSize; id++) if (!taken.has(id)) tok.model.vocab[`▁w${id}`] = id;
  writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(tok));
  const pre = readJson('preprocessor_config.json');
  pre.size = { ...pre.size, longest_edge: Math.max(pre.size.longest_edge, imageSize * imageSize) };
  writeFileSync(join(out, 'preprocessor_config.json'), JSON.stringify(pre, null, 2));
  return { vocabSize };
}

/** A deterministic generator in [0, 1) (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An RGB PNG of `size` x `size`: smooth colour bands whose phases come from `seed` (a different image per request). */
export function png(size, seed) {
  const r = random(seed);
  const [a, b, c] = [r() * 6, r() * 6, r() * 6];
  const raw = Buffer.alloc(size * (3 * size + 1));
  for (let y = 0; y < size; y++) {
    const row = y * (3 * size + 1);
    for (let x = 0; x < size; x++) {
      const i = row + 1 + 3 * x;
      raw[i] = 128 + 127 * Math.sin(x / 17 + a);
      raw[i + 1] = 128 + 127 * Math.sin(y / 23 + b);
      raw[i + 2] = 128 + 127 * Math.sin((x + y) / 29 + c);
    }
  }
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

const WORDS = (
  'the a of to in is on that with as for it by this be are was at from or an which image picture shows ' +
  'describe colour light left right top bottom red green blue sky tree water road house person dog cat small large ' +
  'bright dark near far under over between behind front background detail scene shape line edge corner'
).split(' ');

/**
 * Makes request `k`'s message: its own image and a text of random words whose prompt (chat template, image
 * tokens, generation prompt, as the server's processor makes it) is `promptTokens` long (or as near as words allow).
 */
export async function promptMaker(dir, { promptTokens, imageSize }) {
  const processor = await Processor.fromPretrained(dir);
  const length = async (image, text) =>
    (
      await processor.processChat(
        [
          {
            role: 'user',
            content: [
              { type: 'image', image },
              { type: 'text', text },
            ],
          },
        ],
        { addGenerationPrompt: true },
      )
    ).input_ids.dims[1];
  const first = png(imageSize, 0);
  const overhead = (await length(first, 'a')) - (await processor.tokenizer.encode('a', { addSpecialTokens: false })).length;
  return async (k) => {
    const image = png(imageSize, k + 1);
    const r = random(1000 + k);
    const need = promptTokens - overhead;
    let words = [];
    let n = 0;
    // Words are added while they fit; single 'a's then fill the rest, one token each.
    while (n < need) {
      const next = [...words, WORDS[Math.floor(r() * WORDS.length)]];
      const m = (await processor.tokenizer.encode(next.join(' '), { addSpecialTokens: false })).length;
      if (m > need) break;
      [words, n] = [next, m];
    }
    for (let tries = 0; n < need && tries < 64; tries++) {
      words = [...words, 'a'];
      n = (await processor.tokenizer.encode(words.join(' '), { addSpecialTokens: false })).length;
    }
    const text = words.join(' ');
    const tokens = await length(image, text);
    return { text, image, tokens, url: `data:image/png;base64,${image.toString('base64')}` };
  };
}
