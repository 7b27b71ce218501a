// Requests meant to hurt: each gets its 4xx with an OpenAI error body naming the field, while a normal request
// runs beside them undisturbed, and the server answers normally afterwards.
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import type { PretrainedModel } from '@vlmkit/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataUrl, IMAGES, loadTiny, type Served, serve } from './test-utils/serve.js';

const NAME = 'ernie-tiny';
const KEY = 'sk-test-0123456789';

interface Case {
  name: string;
  /** The body (an object is sent as JSON; a string as written), or a whole request. */
  body?: unknown;
  request?: () => Promise<Response>;
  status: number;
  /** The error's `param` (the field at fault), when the status names one. */
  param?: string | null;
  code?: string;
}

describe('hostile requests to POST /v1/chat/completions', () => {
  let model: PretrainedModel;
  let s: Served;
  let media: string;
  let outside: string;
  let image: string;
  const cases: Case[] = [];

  beforeAll(async () => {
    const root = await mkdtemp(join(tmpdir(), 'vlmkit-serve-hostile-'));
    media = join(root, 'media');
    await mkdir(media);
    outside = join(root, 'secret.jpg');
    await copyFile(join(IMAGES, 'photo.jpg'), outside);
    await copyFile(join(IMAGES, 'photo.jpg'), join(media, 'photo.jpg'));
    await symlink(outside, join(media, 'escape.jpg'));
    await symlink(root, join(media, 'up'));
    await mkdir(join(media, 'dir.jpg'));
    execFileSync('mkfifo', [join(media, 'fifo.jpg')]);
    await writeFile(join(media, 'broken.png'), Buffer.from('\x89PNG\r\n\x1a\n not really a png'));
    model = await loadTiny(NAME);
    s = await serve(model, NAME, { apiKey: KEY, mediaDir: media, allowRemoteMedia: { timeoutMs: 2000 }, maxImagePixels: 4_000_000 });
    image = await dataUrl(join(IMAGES, 'photo.jpg'));
  });
  afterAll(async () => {
    await s?.close();
    await model?.release();
  });

  const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const post = (body: unknown, headers: Record<string, string> = auth) =>
    fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const ask = (content: unknown, extra: Record<string, unknown> = {}) => ({
    model: NAME,
    messages: [{ role: 'user', content }],
    max_tokens: 4,
    ...extra,
  });
  const withImage = (url: string, extra: Record<string, unknown> = {}) =>
    ask(
      [
        { type: 'image_url', image_url: { url } },
        { type: 'text', text: 'What is this?' },
      ],
      extra,
    );
  const part = 'messages[0].content[0].image_url.url';

  // Cases that need the fixtures above are written as functions of them.
  const hostile = (): Case[] => [
    { name: 'malformed JSON', body: '{"model": "ernie-tiny", "messages": [', status: 400, code: 'invalid_json' },
    { name: 'an empty body', body: '', status: 400 },
    { name: 'a JSON array as the body', body: '[1, 2]', status: 400 },
    { name: 'a JSON string as the body', body: '"hello"', status: 400 },
    { name: 'a text/plain body', request: () => post(JSON.stringify(ask('hi')), { ...auth, 'content-type': 'text/plain' }), status: 415 },
    { name: 'a body over the size limit', body: JSON.stringify(ask('x'.repeat(33 * 2 ** 20))), status: 413, code: 'body_too_large' },
    { name: '10 MB of text', body: ask('y'.repeat(10 * 2 ** 20)), status: 400, param: 'messages[0].content', code: 'prompt_too_long' },
    { name: 'a prompt past the model context', body: ask('word '.repeat(6000)), status: 400, param: 'messages', code: 'prompt_too_long' },
    { name: 'no model', body: { messages: [{ role: 'user', content: 'hi' }] }, status: 400, param: 'model' },
    { name: 'an unknown model', body: { ...ask('hi'), model: 'gpt-4o' }, status: 404, param: 'model', code: 'model_not_found' },
    { name: 'model as a number', body: { ...ask('hi'), model: 7 }, status: 400, param: 'model' },
    { name: 'no messages', body: { model: NAME }, status: 400, param: 'messages' },
    { name: 'messages empty', body: { model: NAME, messages: [] }, status: 400, param: 'messages' },
    { name: 'messages as a string', body: { model: NAME, messages: 'hi' }, status: 400, param: 'messages' },
    { name: 'a message without a role', body: { model: NAME, messages: [{ content: 'hi' }] }, status: 400, param: 'messages[0].role' },
    {
      name: 'an unknown role',
      body: { model: NAME, messages: [{ role: 'wizard', content: 'hi' }] },
      status: 400,
      param: 'messages[0].role',
    },
    {
      name: 'a tool message',
      body: { model: NAME, messages: [{ role: 'tool', content: 'hi', tool_call_id: 'x' }] },
      status: 400,
      param: 'messages[0].role',
    },
    { name: 'content null', body: ask(null), status: 400, param: 'messages[0].content' },
    { name: 'content a number', body: ask(42), status: 400, param: 'messages[0].content' },
    {
      name: 'an audio part',
      body: ask([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]),
      status: 400,
      param: 'messages[0].content[0].type',
    },
    { name: 'a text part without text', body: ask([{ type: 'text' }]), status: 400, param: 'messages[0].content[0].text' },
    { name: 'an image part without a url', body: ask([{ type: 'image_url', image_url: {} }]), status: 400, param: part },
    { name: 'max_tokens as a string', body: ask('hi', { max_tokens: '12' }), status: 400, param: 'max_tokens' },
    { name: 'negative max_tokens', body: ask('hi', { max_tokens: -5 }), status: 400, param: 'max_tokens' },
    {
      name: 'fractional max_completion_tokens',
      body: ask('hi', { max_completion_tokens: 1.5 }),
      status: 400,
      param: 'max_completion_tokens',
    },
    { name: 'max_tokens past the limit', body: ask('hi', { max_tokens: 10 ** 9 }), status: 400, param: 'max_tokens' },
    { name: 'negative temperature', body: ask('hi', { temperature: -1 }), status: 400, param: 'temperature' },
    { name: 'top_p 0', body: ask('hi', { temperature: 1, top_p: 0 }), status: 400, param: 'top_p' },
    { name: 'a negative seed', body: ask('hi', { temperature: 1, seed: -3 }), status: 400, param: 'seed' },
    { name: 'stream as a string', body: ask('hi', { stream: 'yes' }), status: 400, param: 'stream' },
    { name: 'five stop strings', body: ask('hi', { stop: ['a', 'b', 'c', 'd', 'e'] }), status: 400, param: 'stop' },
    { name: 'an unknown field', body: ask('hi', { frobnicate: true }), status: 400, param: 'frobnicate', code: 'unknown_parameter' },
    { name: 'n = 2', body: ask('hi', { n: 2 }), status: 400, param: 'n', code: 'unsupported_parameter' },
    { name: 'tools', body: ask('hi', { tools: [{ type: 'function', function: { name: 'f' } }] }), status: 400, param: 'tools' },
    { name: 'logprobs', body: ask('hi', { logprobs: true }), status: 400, param: 'logprobs' },
    { name: 'response_format json', body: ask('hi', { response_format: { type: 'json_object' } }), status: 400, param: 'response_format' },
    {
      name: 'a __proto__ key',
      body: `{"model":"${NAME}","messages":[{"role":"user","content":"hi"}],"__proto__":{"admin":true}}`,
      status: 400,
    },
    {
      name: 'a broken image',
      body: withImage(`data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}`),
      status: 400,
      param: part,
      code: 'invalid_image',
    },
    { name: 'a truncated JPEG', body: withImage(image.slice(0, 400)), status: 400, param: part },
    { name: 'a data URL that is not base64', body: withImage('data:image/png,hello'), status: 400, param: part, code: 'invalid_data_url' },
    {
      name: 'a data URL with bad base64',
      body: withImage('data:image/png;base64,@@@@'),
      status: 400,
      param: part,
      code: 'invalid_data_url',
    },
    {
      name: 'an image past the pixel limit',
      body: withImage(`data:image/png;base64,${largePng().toString('base64')}`),
      status: 400,
      param: part,
      code: 'media_too_large',
    },
    {
      name: 'an image in an assistant message',
      body: { model: NAME, messages: [{ role: 'assistant', content: [{ type: 'image_url', image_url: { url: image } }] }] },
      status: 400,
      param: 'messages[0].content[0]',
    },
    {
      name: 'seventeen images',
      body: ask(Array.from({ length: 17 }, () => ({ type: 'image_url', image_url: { url: image } }))),
      status: 400,
      param: 'messages[0].content[16]',
    },
    { name: 'an absolute path outside --media-dir', body: withImage(outside), status: 400, param: part, code: 'invalid_path' },
    { name: '/etc/passwd', body: withImage('/etc/passwd'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a .. path', body: withImage('../secret.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a .. hidden mid-path', body: withImage('sub/../../secret.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a symlink out of --media-dir', body: withImage('escape.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a symlinked directory out of --media-dir', body: withImage('up/secret.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a file:// URL outside --media-dir', body: withImage(`file://${outside}`), status: 400, param: part, code: 'invalid_path' },
    { name: 'a missing file', body: withImage('nope.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a directory', body: withImage('dir.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a FIFO', body: withImage('fifo.jpg'), status: 400, param: part, code: 'invalid_path' },
    { name: 'a broken file under --media-dir', body: withImage('broken.png'), status: 400, param: part, code: 'invalid_image' },
    { name: 'an ftp: URL', body: withImage('ftp://example.com/a.png'), status: 400, param: part, code: 'unsupported_url' },
    { name: 'an http URL without a host', body: withImage('http://'), status: 400, param: part, code: 'invalid_url' },
    { name: 'an unclosed IPv6 host', body: withImage('http://[::1/a.png'), status: 400, param: part, code: 'invalid_url' },
    { name: 'a loopback URL', body: withImage('http://127.0.0.1:1/a.png'), status: 400, param: part, code: 'remote_media_forbidden' },
    { name: 'localhost', body: withImage('http://localhost/a.png'), status: 400, param: part, code: 'remote_media_forbidden' },
    { name: 'an IPv6 loopback URL', body: withImage('http://[::1]:8000/a.png'), status: 400, param: part, code: 'remote_media_forbidden' },
    {
      name: 'an IPv4-mapped IPv6 URL',
      body: withImage('http://[::ffff:127.0.0.1]/a.png'),
      status: 400,
      param: part,
      code: 'remote_media_forbidden',
    },
    {
      name: 'the cloud metadata address',
      body: withImage('http://169.254.169.254/latest/meta-data'),
      status: 400,
      param: part,
      code: 'remote_media_forbidden',
    },
    { name: 'a private 10/8 address', body: withImage('https://10.1.2.3/a.png'), status: 400, param: part, code: 'remote_media_forbidden' },
    {
      name: 'a decimal-encoded loopback host',
      body: withImage('http://2130706433/a.png'),
      status: 400,
      param: part,
      code: 'remote_media_forbidden',
    },
    {
      name: 'a broken video',
      body: ask([
        { type: 'video_url', video_url: { url: `data:video/mp4;base64,${Buffer.from('no video here').toString('base64')}` } },
        { type: 'text', text: 'hi' },
      ]),
      status: 400,
      param: 'messages',
    },
    {
      name: 'no Authorization',
      request: () => post(ask('hi'), { 'content-type': 'application/json' }),
      status: 401,
      code: 'invalid_api_key',
    },
    {
      name: 'a wrong key',
      request: () => post(ask('hi'), { ...auth, authorization: `Bearer ${KEY}x` }),
      status: 401,
      code: 'invalid_api_key',
    },
    {
      name: 'Basic auth',
      request: () => post(ask('hi'), { ...auth, authorization: `Basic ${Buffer.from(`u:${KEY}`).toString('base64')}` }),
      status: 401,
    },
    { name: '/v1/models without a key', request: () => fetch(`${s.url}/v1/models`), status: 401 },
    { name: '/metrics without a key', request: () => fetch(`${s.url}/metrics`), status: 401 },
    {
      name: 'an unknown route',
      request: () => fetch(`${s.url}/v1/completions`, { method: 'POST', headers: auth, body: '{}' }),
      status: 404,
    },
  ];

  it('answers each with its 4xx and an error body naming the field, while a normal request runs beside them', async () => {
    cases.push(...hostile());
    expect(cases.length).toBeGreaterThanOrEqual(30);
    // A streamed answer in flight the whole time: its text must equal the same request's alone.
    const normal = withImage(image, { max_tokens: 24 });
    const alone = (await (await post(normal)).json()) as { choices: { message: { content: string } }[] };
    const beside = post({ ...normal, stream: true }).then((r) => r.text());
    const results: { name: string; status: number; text: string }[] = [];
    for (const c of cases) {
      const r = await (c.request?.() ?? post(c.body));
      const text = await r.text();
      results.push({ name: c.name, status: r.status, text });
    }
    const wrong = cases.flatMap((c, i) => {
      const r = results[i]!;
      let error: { message?: unknown; type?: unknown; param?: unknown; code?: unknown } = {};
      try {
        error = (JSON.parse(r.text) as { error: typeof error }).error ?? {};
      } catch {
        // not JSON: reported below
      }
      const ok =
        r.status === c.status &&
        typeof error.message === 'string' &&
        typeof error.type === 'string' &&
        (c.param === undefined || error.param === c.param) &&
        (c.code === undefined || error.code === c.code);
      return ok ? [] : [`${c.name}: ${r.status} ${r.text.slice(0, 300)}`];
    });
    expect(wrong).toEqual([]);
    const streamed = (await beside)
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
      .join('');
    expect(streamed).toBe(alone.choices[0]!.message.content);
  });

  it('fetches from a public address (with remote media allowed): refused only for failing to connect here', async () => {
    const r = await post(withImage('http://93.184.216.34/a.png'));
    const { error } = (await r.json()) as { error: { code: string; param: string } };
    expect(r.status).toBe(400);
    expect(error.param).toBe(part);
    // The test machine has no route out: the fetch fails or times out (2 s here); the address was not refused.
    expect(['remote_media_failed', 'remote_media_timeout']).toContain(error.code);
  });

  it('still serves normally afterwards: a file under --media-dir gives the data URL answer', async () => {
    type Body = { choices: { message: { content: string } }[] };
    const a = (await (await post(withImage('photo.jpg'))).json()) as Body;
    const b = (await (await post(withImage(image))).json()) as Body;
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });
});

/** A PNG of 2100 x 2100 pixels (past the server's 4 M pixel limit here), small as a file. */
function largePng(): Buffer {
  const w = 2100;
  const h = 2100;
  const crc = (buf: Buffer) => {
    let c = ~0;
    for (const b of buf) {
      c ^= b;
      for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
    }
    return ~c >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const t = Buffer.concat([Buffer.from(type), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(t));
    return Buffer.concat([len, t, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.writeUInt8(8, 8);
  ihdr.writeUInt8(0, 9);
  const raw = Buffer.alloc((w + 1) * h);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
