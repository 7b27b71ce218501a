import { formatInspectReport, inspectCheckpoint } from '@vlmkit/models';
import type { Out } from './commands.js';

export interface InspectCommandOptions {
  model: string;
  adapter?: string | undefined;
  json: boolean;
}

/**
 * `vlmkit inspect`: checks a checkpoint directory as a load would (config.json, the headers of the weight files
 * transformers reads, the weight mapping with shapes and dtypes, the adapter), without building graphs or
 * reading tensor data; other .safetensors files there are listed as not read. The
 * report goes to `out`; the first problem, if any, to `err` as `vlmkit: [CODE] where: message`. Returns the
 * exit code: 0 when the checkpoint is good, 1 otherwise.
 */
export async function inspectCommand(o: InspectCommandOptions, out: Out, err: Out): Promise<number> {
  const r = await inspectCheckpoint(o.model, { adapter: o.adapter });
  out(o.json ? `${JSON.stringify(r)}\n` : formatInspectReport(r));
  const first = r.problems[0];
  if (first === undefined) return 0;
  err(`vlmkit: [${first.code}] ${first.where}: ${first.message}\n`);
  return 1;
}
