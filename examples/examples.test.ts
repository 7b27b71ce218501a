// Runs every example as a user would, with node on its compiled JavaScript (against the @vlmkit packages'
// built dist/, which `pnpm test` builds first: turbo's test task depends on ^build), and checks what it
// prints against the same computation done here through @vlmkit/models (imported from sources).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  buildErnieVisionEncoder,
  ERNIE_VISION_ENCODER_OUTPUTS,
  Ernie45VL,
  type ErnieInputs,
  ernie45VLConfig,
  ernieVisionEncoderFeeds,
} from '@vlmkit/models';
import { ernieTextExpectedParameters } from '@vlmkit/moe-decoder';
import { serializeModel } from '@vlmkit/onnx-graph';
import { Processor, type ProcessorOutputs } from '@vlmkit/processors';
import { expectedParameters } from '@vlmkit/resampler';
import { createSession } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import { expectedErnieVisionParameters } from '@vlmkit/vision-tower';
import { mapErnie45VL } from '@vlmkit/weight-mapper';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const MODEL = join(ROOT, 'test-fixtures/ernie-tiny');
const PHOTO = join(ROOT, 'test-fixtures/processors/images/photo.jpg');
const QUESTION = 'What is in the picture?';
// Built graphs of the examples that load whole models go here, not into the user's cache.
const cache = mkdtempSync(join(tmpdir(), 'vlmkit-examples-'));

/** `node examples/dist/<name>.js` from the repository root, as examples/README.md says; its stdout. */
function run(name: string, ...args: string[]): string {
  return execFileSync(process.execPath, [join(HERE, 'dist', `${name}.js`), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
}

/** Numbers after `label:` on the line that starts with it. */
function numbers(out: string, label: string): number[] {
  const line = out.split('\n').find((l) => l.startsWith(label));
  if (line === undefined) throw new Error(`no line starting with ${JSON.stringify(label)} in:\n${out}`);
  return line
    .slice(label.length)
    .match(/-?\d+(\.\d+)?/g)!
    .map(Number);
}

function ernieInputs(processor: Processor): Promise<ProcessorOutputs> {
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'image', path: PHOTO },
        { type: 'text', text: QUESTION },
      ],
    },
  ];
  return processor.processChat(messages, { addGenerationPrompt: true });
}

beforeAll(() => {
  // The examples run against the packages' dist/, as a user's would: `pnpm test` (turbo) builds them first;
  // a bare `vitest run` here needs `pnpm turbo run build --filter=@vlmkit/examples^...` after source changes.
  const deps = Object.keys((JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8')) as { dependencies: object }).dependencies);
  for (const dep of deps.filter((d) => d.startsWith('@vlmkit/'))) {
    if (!existsSync(join(ROOT, 'packages', dep.slice('@vlmkit/'.length), 'dist/index.js'))) {
      throw new Error(`${dep} is not built; run \`pnpm turbo run build --filter=@vlmkit/examples^...\` first`);
    }
  }
  // The examples compiled as a user would compile them (tsc, no @vlmkit/source condition).
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(HERE, 'tsconfig.build.json')], { cwd: HERE });
});
afterAll(() => rmSync(cache, { recursive: true, force: true }));

describe('examples', () => {
  it('vision-tower: the tower alone on photo.jpg gives what the models package vision encoder gives', async () => {
    const out = run('vision-tower');
    expect(out).toContain('grid_thw [1, 4, 6], pixel_values [24, 588]');
    expect(out).toContain('vision_hidden [24, 32]');

    // The same pixels through @vlmkit/models' vision encoder graph (tower + resampler), its vision_hidden output.
    const processor = await Processor.fromPretrained(MODEL);
    const inputs = await ernieInputs(processor);
    const json = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')) as Record<string, unknown>;
    const config = ernie45VLConfig(json);
    const ckpt = await Checkpoint.open(MODEL);
    const w = await mapErnie45VL(ckpt, {
      vision: { parameters: expectedErnieVisionParameters(config.vision) },
      resampler: { parameters: expectedParameters(config.resampler) },
      decoder: { parameters: ernieTextExpectedParameters(config.text), config: config.text },
    });
    const { bytes, externalData } = await serializeModel(buildErnieVisionEncoder(config, w));
    const session = await createSession(bytes, { externalData, device: 'cpu' });
    await ckpt.close();
    const feeds = ernieVisionEncoderFeeds(inputs.pixel_values!.data, [[1, 4, 6]], config);
    const hidden = (await session.run(feeds))[ERNIE_VISION_ENCODER_OUTPUTS.names.vision_hidden]!.data as Float32Array;
    await session.release();
    expect(hidden.length).toBe(24 * 32);
    const first = numbers(out, 'patch 0:');
    expect(first).toHaveLength(6);
    first.forEach((v, i) => {
      expect(Math.abs(v - hidden[i]!), `patch 0 value ${i}`).toBeLessThanOrEqual(1e-5);
    });
    const meanAbs = hidden.reduce((a, v) => a + Math.abs(v), 0) / hidden.length;
    expect(Math.abs(numbers(out, 'mean |x|:')[0]! - meanAbs)).toBeLessThanOrEqual(1e-5);
  });

  it('mrope-positions: 3D positions of a prompt with an image and a video (vLLM rule, worked out by hand)', () => {
    expect(run('mrope-positions')).toBe(
      [
        'prompt of 25 tokens (t text, | start/end, I image, V video), position_ids [3, 1, 25]:',
        'kind  t  t  t  |  I  I  I  I  I  I  |  t  t  |  V  V  V  V  V  V  V  V  |  t  t',
        // image (t', h', w') = (1, 2, 3) from 4; text resumes at its max + 1 = 7; video (2, 2, 2) from 11.
        't     0  1  2  3  4  4  4  4  4  4  7  8  9 10 11 11 11 11 12 12 12 12 13 14 15',
        'h     0  1  2  3  4  4  4  5  5  5  7  8  9 10 11 11 12 12 11 11 12 12 13 14 15',
        'w     0  1  2  3  4  5  6  4  5  6  7  8  9 10 11 12 11 12 11 12 11 12 13 14 15',
        'rope delta: -9 (max position + 1 - prompt length)',
        'next 3 tokens at: 16, 17, 18',
        '',
      ].join('\n'),
    );
  });

  it('custom-pipeline: hand-composed vision encoder + decoder give the logits of Ernie45VL.forward', async () => {
    const out = run('custom-pipeline');
    expect(out).toContain('prompt: 36 tokens, 6 image placeholders, grid_thw [1, 4, 6]');
    expect(out).toContain('image_embeds [6, 64], logits [1, 36, 256]');

    const processor = await Processor.fromPretrained(MODEL);
    const inputs = await ernieInputs(processor);
    const model = await Ernie45VL.fromPretrained(MODEL, { cacheDir: cache, device: 'cpu' });
    const { logits } = await model.forward(inputs as unknown as ErnieInputs);
    await model.release();
    const V = 256;
    const last = Array.from((logits.data as Float32Array).subarray(35 * V, 36 * V));
    const top = [...last.keys()].sort((a, b) => last[b]! - last[a]!).slice(0, 5);
    const printed = numbers(out, 'last position top 5:');
    // "id (logit), ..." pairs.
    expect(printed.filter((_, i) => i % 2 === 0)).toEqual(top);
    printed
      .filter((_, i) => i % 2 === 1)
      .forEach((v, k) => {
        expect(Math.abs(v - last[top[k]!]!), `logit of ${top[k]}`).toBeLessThanOrEqual(1e-4);
      });
    expect(out).toContain(`next token: ${JSON.stringify(await processor.decode([top[0]!]))}`);
  });

  it('chat: the streamed text is the greedy answer of generate(), decoded', async () => {
    const out = run('chat');
    const processor = await Processor.fromPretrained(MODEL);
    const model = await Ernie45VL.fromPretrained(MODEL, { cacheDir: cache, device: 'cpu' });
    const { tokens } = await model.generate((await ernieInputs(processor)) as unknown as ErnieInputs, { maxNewTokens: 16 });
    await model.release();
    const ids = tokens[0]!;
    const text = await processor.decode(ids, { skipSpecialTokens: true });
    expect(text.length).toBeGreaterThan(0);
    const [answer, summary] = out.split('\n[');
    expect(answer).toBe(text);
    expect(summary).toMatch(
      new RegExp(`^36 prompt tokens, ${ids.length} new \\((stop|length)\\), first token after \\d+ ms, [\\d.]+ tokens/s, \\w+\\]\\n$`),
    );
  });
});
