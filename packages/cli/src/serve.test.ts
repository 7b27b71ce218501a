// `vlmkit serve` as a real process (dist/bin.js): the openai client's answers equal `vlmkit run`'s for the same
// message on both tiny models, and SIGTERM ends it with exit 0 after finishing or cancelling what runs.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@vlmkit/models';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from './main.js';
import { BIN } from './test-utils/cli-process.js';

const IMAGE = join(FIXTURE_DIR, 'processors', 'images', 'photo.jpg');
const PROMPT = 'Describe this image.';
const KEY = 'sk-serve-test';

interface Serving {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `vlmkit serve` on a free port and waits until it says it is ready. */
async function startServe(args: string[]): Promise<Serving> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + 60_000;
  while (!/ready on /.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`vlmkit serve did not get ready:\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
  return { child, url, stdout: () => out, exited };
}

/** `vlmkit run`'s streamed answer (its text output without the summary line). */
async function runAnswer(model: string, maxNewTokens: number): Promise<string> {
  let text = '';
  const code = await main(
    ['run', '--model', model, '--image', IMAGE, '--prompt', PROMPT, '--max-new-tokens', String(maxNewTokens)],
    (s) => {
      text += s;
    },
    { tty: false, err: () => undefined },
  );
  expect(code).toBe(0);
  return text.slice(0, text.lastIndexOf('\n', text.length - 2));
}

async function chat(url: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  const image = `data:image/jpeg;base64,${(await readFile(IMAGE)).toString('base64')}`;
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: image } },
            { type: 'text', text: PROMPT },
          ],
        },
      ],
      ...body,
    }),
    signal,
  });
}

/** The content of an SSE body, joined. */
function streamedText(body: string): string {
  return body
    .split('\n\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => (JSON.parse(l.slice(6)) as { choices?: { delta: { content?: string } }[] }).choices?.[0]?.delta.content ?? '')
    .join('');
}

for (const name of ['ernie-tiny', 'granite-tiny']) {
  describe(`vlmkit serve on ${name}`, () => {
    const model = join(FIXTURE_DIR, name);
    let s: Serving;
    beforeAll(async () => {
      // A grace period no loaded machine reaches: the SIGTERM test's stream must finish, not be cancelled.
      s = await startServe(['--model', model, '--api-key', KEY, '--grace-seconds', '600']);
    });
    afterAll(async () => {
      if (s && s.child.exitCode === null) {
        s.child.kill('SIGKILL');
        await s.exited;
      }
    });

    it('answers streamed and not (openai client) with the text vlmkit run prints for the same message', async () => {
      const expected = await runAnswer(model, 12);
      const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: KEY, maxRetries: 0 });
      const image = `data:image/jpeg;base64,${(await readFile(IMAGE)).toString('base64')}`;
      const messages = [
        {
          role: 'user' as const,
          content: [
            { type: 'image_url' as const, image_url: { url: image } },
            { type: 'text' as const, text: PROMPT },
          ],
        },
      ];
      const whole = await client.chat.completions.create({ model: name, messages, max_tokens: 12 });
      expect(whole.choices[0]!.message.content).toBe(expected);
      let streamed = '';
      for await (const c of await client.chat.completions.create({ model: name, messages, max_tokens: 12, stream: true })) {
        streamed += c.choices[0]?.delta.content ?? '';
      }
      expect(streamed).toBe(expected);
      const raw = await (await chat(s.url, { model: name, max_tokens: 12, stream: true })).text();
      expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    });

    it('SIGTERM: the running stream is finished, new requests are refused, exit 0', async () => {
      const expected = await runAnswer(model, 400);
      const response = await chat(s.url, { model: name, max_tokens: 400, stream: true });
      // SIGTERM once the first chunk has arrived: the answer is mid-stream.
      const reader = response.body!.getReader();
      const first = await reader.read();
      s.child.kill('SIGTERM');
      let body = new TextDecoder().decode(first.value);
      for (let r = await reader.read(); !r.done; r = await reader.read()) body += new TextDecoder().decode(r.value);
      expect(streamedText(body)).toBe(expected);
      const late = await chat(s.url, { model: name, max_tokens: 4 }).then(
        (r) => r.status,
        () => 'refused',
      );
      expect([503, 'refused']).toContain(late);
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(s.stdout()).toMatch(/stopped\n$/);
    });
  });
}

describe('vlmkit serve --served-model-name and --deadline-seconds', () => {
  it('answers to each name given, names the first in its answers, and cancels a request past the deadline (504)', async () => {
    const s = await startServe([
      '--model',
      join(FIXTURE_DIR, 'ernie-tiny'),
      '--api-key',
      KEY,
      '--served-model-name',
      'tiny',
      '--served-model-name',
      'ernie',
    ]);
    try {
      expect(s.stdout()).toMatch(/\(model 'tiny', 'ernie', API key required\)/);
      const short = (await (await chat(s.url, { model: 'ernie', max_tokens: 4 })).json()) as { model: string };
      expect(short.model).toBe('tiny');
      expect((await chat(s.url, { model: 'ernie-tiny', max_tokens: 4 })).status).toBe(404);
    } finally {
      s.child.kill('SIGTERM');
      expect(await s.exited).toEqual({ code: 0, signal: null });
    }
    // Its own server: under load even a short request could pass a 1 s deadline.
    const d = await startServe(['--model', join(FIXTURE_DIR, 'ernie-tiny'), '--api-key', KEY, '--deadline-seconds', '1']);
    try {
      expect((await chat(d.url, { model: 'ernie-tiny', max_tokens: 3000 })).status).toBe(504);
    } finally {
      d.child.kill('SIGTERM');
      expect(await d.exited).toEqual({ code: 0, signal: null });
    }
  });
});

describe('vlmkit serve SIGTERM past the grace period', () => {
  it('cancels a long stream after --grace-seconds, ends it with an error event and [DONE], exits 0', async () => {
    const s = await startServe(['--model', join(FIXTURE_DIR, 'ernie-tiny'), '--api-key', KEY, '--grace-seconds', '1']);
    try {
      const response = await chat(s.url, { model: 'ernie-tiny', max_tokens: 3000, stream: true });
      const body = response.text();
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      s.child.kill('SIGTERM');
      const text = await body;
      expect(text).toMatch(/"code":"shutdown"/);
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(performance.now() - t0).toBeLessThan(20_000);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });
});

describe('vlmkit serve options', () => {
  const model = join(FIXTURE_DIR, 'ernie-tiny');
  for (const [args, message] of [
    [['--port', 'http'], /--port must be a number/],
    [['--port', '70000'], /--port must be an integer in \[0, 65535\]/],
    [['--max-batch', '0'], /--max-batch must be an integer in \[1, /],
    [['--max-queue', '-1'], /--max-queue must be an integer in \[0, /],
    [['--grace-seconds', '1.5'], /--grace-seconds must be an integer/],
    [['--media-dir', join(FIXTURE_DIR, 'ernie-tiny', 'config.json')], /--media-dir .* is not a directory/],
  ] as const) {
    it(`refuses ${args.join(' ')} before loading anything (exit 2)`, async () => {
      let err = '';
      const code = await main(['serve', '--model', model, ...args], () => undefined, {
        tty: false,
        err: (s) => {
          err += s;
        },
      });
      expect(code).toBe(2);
      expect(err).toMatch(message);
    });
  }

  it('--help prints the serve usage', async () => {
    let out = '';
    const code = await main(['serve', '--help'], (s) => {
      out += s;
    });
    expect(code).toBe(0);
    expect(out).toMatch(/^usage: vlmkit serve --model DIR \[--host 127\.0\.0\.1\]/);
  });
});
