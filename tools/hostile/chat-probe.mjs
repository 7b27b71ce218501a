// The library's chat API as a child process of the hostile suite: Processor.fromPretrained(model)
// then processChat(messages, { addGenerationPrompt: true }), as HF's
// processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
// return_dict=True). Writes the outputs as JSON ({ name: { dtype, dims, data } }) to OUT.
//
//   node tools/hostile/chat-probe.mjs REPO_ROOT MODEL_DIR MESSAGES.json OUT.json
//
// REPO_ROOT is the checkout under test (its packages/processors/dist is imported). A typed error
// (one with a `code`) is printed as the CLI prints it (`vlmkit: [CODE] message`, exit 1); anything
// else is rethrown, so an untyped error shows as the crash it is.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [root, model, messagesPath, outPath] = process.argv.slice(2);
const { Processor } = await import(pathToFileURL(join(root, 'packages/processors/dist/index.js')).href);
const messages = JSON.parse(await readFile(messagesPath, 'utf8'));

try {
  const processor = await Processor.fromPretrained(model);
  const outputs = await processor.processChat(messages, { addGenerationPrompt: true });
  const json = {};
  for (const [name, t] of Object.entries(outputs)) {
    if (t === undefined) continue;
    json[name] = { dtype: t.dtype, dims: [...t.dims], data: Array.from(t.data, Number) };
  }
  await writeFile(outPath, JSON.stringify(json));
} catch (e) {
  if (e && typeof e.code === 'string') {
    process.stderr.write(`vlmkit: [${e.code}] ${e.message}\n`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
