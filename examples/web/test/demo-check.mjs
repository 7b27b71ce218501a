// The demo page (index.html) driven as a user would: the tiny ERNIE by URL, an image, a question; its streamed
// answer must be the text Node's chat() gives for the same files, image and question.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPretrained } from '@vlmkit/models';

const QUESTION = 'Describe this image.';
const MAX_NEW_TOKENS = 16;
const IMAGE = 'processors/images/photo.jpg';

async function nodeAnswer(fixtures) {
  const cacheDir = await mkdtemp(join(tmpdir(), 'vlmkit-test-browser-'));
  const model = await loadPretrained(join(fixtures, 'ernie-tiny'), { device: 'cpu', cacheDir });
  try {
    const image = new Uint8Array(await readFile(join(fixtures, IMAGE)));
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'image', image },
          { type: 'text', text: QUESTION },
        ],
      },
    ];
    return await model.chat(messages, { maxNewTokens: MAX_NEW_TOKENS }).summary();
  } finally {
    await model.release();
    await rm(cacheDir, { recursive: true, force: true });
  }
}

export async function demoCheck(report, browser, url, fixtures, limitMs) {
  const label = 'demo page: ernie-tiny by URL, photo.jpg, a question on wasm';
  const page = await browser.newPage();
  try {
    await page.goto(`${url}/index.html`);
    await page.check('input[name=source][value=url]');
    await page.fill('#url', `${url}/fixtures/ernie-tiny/`);
    await page.setInputFiles('#image', join(fixtures, IMAGE));
    await page.fill('#question', QUESTION);
    await page.fill('#max-tokens', String(MAX_NEW_TOKENS));
    await page.selectOption('#device', 'wasm');
    await page.click('#ask');
    // Done when the stats line is written, or the status shows an error with the button enabled again.
    await page.waitForFunction(
      () => document.getElementById('stats').textContent !== '' || !document.getElementById('ask').disabled,
      undefined,
      { timeout: limitMs },
    );
    const [answer, stats, status] = await Promise.all(['#answer', '#stats', '#status'].map((s) => page.textContent(s)));
    const ref = await nodeAnswer(fixtures);
    const ok = stats !== '' && answer === ref.text;
    report.check(
      label,
      ok,
      ok
        ? `answer equal to Node's chat() (${ref.newTokens} tokens); ${status}; ${stats}`
        : `page: ${JSON.stringify(answer)} (${stats || status}); Node: ${JSON.stringify(ref.text)}`,
    );
  } catch (err) {
    report.error(label, err);
  } finally {
    await page.close();
  }
}
