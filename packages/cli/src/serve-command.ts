// `vlmkit serve`: the model loaded once, an OpenAI-compatible server on it (@vlmkit/server). The server listens
// first (GET /health answers 503 while the model loads), then serves until SIGTERM or Ctrl-C: it stops taking
// requests, lets the running ones finish (cancelling what is left after the grace period) and returns 0.
import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { createEngine, familyAt, loadPretrained, type PretrainedModel } from '@vlmkit/models';
import { createServer } from '@vlmkit/server';
import { type CommonOptions, modelLoadOptions, type Out, UsageError } from './commands.js';

export interface ServeCommandOptions extends CommonOptions {
  host: string;
  port: number;
  maxBatch?: number | undefined;
  maxQueue?: number | undefined;
  /** Default: the VLMKIT_API_KEY environment variable; none: no key asked. */
  apiKey?: string | undefined;
  mediaDir?: string | undefined;
  allowRemoteMedia?: boolean | undefined;
  /** The names requests give as `model` (the first is the answers'); default the model directory's name. */
  names?: readonly string[] | undefined;
  /** Seconds a request may run before it is cancelled (default 600). */
  deadlineSeconds?: number | undefined;
  /** Seconds the running requests get to finish once told to stop (default 30). */
  graceSeconds?: number | undefined;
  /** Ends the server (the command sets SIGTERM and SIGINT on it). */
  stop: AbortSignal;
}

/** Serves until `stop` aborts; returns once the server and the model are closed. */
export async function serveCommand(o: ServeCommandOptions, out: Out): Promise<void> {
  // Before anything listens: the model directory a known family, the media directory a directory.
  await familyAt(o.model);
  if (o.mediaDir !== undefined && !(await stat(o.mediaDir).catch(() => undefined))?.isDirectory()) {
    throw new UsageError(`--media-dir ${o.mediaDir} is not a directory`);
  }
  const apiKey = o.apiKey ?? (process.env.VLMKIT_API_KEY || undefined);
  let model: PretrainedModel | undefined;
  const engine = loadPretrained(o.model, modelLoadOptions(o)).then((m) => {
    model = m;
    return createEngine(m, { maxBatch: o.maxBatch });
  });
  // By default the model's directory name is the name clients ask for (vLLM's --served-model-name defaults to the path).
  const names = o.names !== undefined && o.names.length > 0 ? o.names : [basename(resolve(o.model))];
  const server = createServer({
    engine,
    model: names,
    apiKey,
    deadlineMs: o.deadlineSeconds === undefined ? undefined : o.deadlineSeconds * 1000,
    mediaDir: o.mediaDir,
    allowRemoteMedia: o.allowRemoteMedia,
    maxQueue: o.maxQueue,
  });
  const address = await server.listen({ host: o.host, port: o.port });
  const named = names.map((n) => `'${n}'`).join(', ');
  out(`vlmkit serve: listening on ${address} (model ${named}${apiKey === undefined ? '' : ', API key required'}); loading the model\n`);
  const stopped = new Promise<void>((resolve) => {
    if (o.stop.aborted) resolve();
    else o.stop.addEventListener('abort', () => resolve(), { once: true });
  });
  try {
    const ready = await Promise.race([engine.then(() => true), stopped.then(() => false)]);
    if (ready) {
      const stats = (await engine).stats();
      out(`vlmkit serve: ready on ${address}: ${model?.device ?? '?'}, batches of up to ${stats.maxBatch}\n`);
    }
    await stopped;
    out('vlmkit serve: stopping: no new requests, finishing the running ones\n');
  } finally {
    await server.close({ graceMs: (o.graceSeconds ?? 30) * 1000 });
    await engine.then(
      () => model?.release(),
      () => undefined,
    );
  }
  out('vlmkit serve: stopped\n');
}
