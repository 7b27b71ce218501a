// The quick check of a downloaded checkpoint: everything a load reads before it builds a graph, with every
// problem kept instead of the first one thrown. config.json through the model's own reader, the headers of the
// weight files a load reads (Checkpoint.open: model.safetensors, else the index's shards), the weight mapping (weight-mapper's tables against each component's
// expectedParameters: names, shapes, dtypes), and a LoRA adapter if given. No graph is built and no tensor
// data is read.
import { resolve } from 'node:path';
import { ConfigError } from '@vlmkit/config';
import { Checkpoint, checkpointFiles, SafetensorsError } from '@vlmkit/safetensors';
import { type LoraAdapter, MappingError, type MappingReport, readLoraAdapter } from '@vlmkit/weight-mapper';
import { readConfigFile } from './config-file.js';
import { ModelError } from './errors.js';
import { familyOf } from './families.js';
import { checkAdapter, type FamilyConfig, type ModelFamily } from './family.js';
import { readGenerationConfig } from './generation-tokens.js';
import type { InspectComponent, InspectOptions, InspectProblem, InspectReport } from './inspect-report.js';

/** A thrown vlmkit error as a problem; anything else is rethrown (a bug, not a finding). */
function problem(e: unknown): InspectProblem {
  if (e instanceof ConfigError) return { code: e.code, where: `${e.config}: ${e.field}`, message: e.message };
  if (e instanceof SafetensorsError || e instanceof MappingError)
    return { code: e.code, where: [e.file, e.tensor].filter((x) => x !== undefined).join(': ') || '-', message: e.message };
  if (e instanceof ModelError) return { code: e.code, where: 'config.json', message: e.message };
  throw e;
}

/**
 * Checks a checkpoint directory the way a load would, without building graphs or reading tensor data, and
 * reports what it found. Problems are collected, not thrown: `report.problems[0]` is the first one.
 */
export async function inspectCheckpoint(dir: string, options: InspectOptions = {}): Promise<InspectReport> {
  const root = resolve(dir);
  const problems: InspectProblem[] = [];
  const empty = { mapped: 0, ignored: 0, unused: [], missing: [], mismatched: [] };
  const done = (r: Partial<InspectReport> = {}): InspectReport => ({
    dir: root,
    modelType: undefined,
    files: [],
    unread: [],
    components: [],
    tensors: empty,
    adapter: undefined,
    problems,
    ...r,
  });

  let family: ModelFamily;
  let config: FamilyConfig;
  try {
    const file = await readConfigFile(root);
    family = familyOf(file);
    config = family.config(file.json, await readGenerationConfig(root), {});
  } catch (e) {
    problems.push(problem(e));
    return done();
  }

  let ckpt: Checkpoint;
  let unread: readonly string[];
  try {
    unread = (await checkpointFiles(root)).unread;
    ckpt = await Checkpoint.open(root);
  } catch (e) {
    problems.push(problem(e));
    return done({ modelType: family.modelTypes[0] });
  }
  try {
    const byFile = new Map<string, number>();
    for (const n of ckpt.names()) {
      const f = ckpt.info(n).file;
      byFile.set(f, (byFile.get(f) ?? 0) + 1);
    }
    const files = [...byFile].map(([path, tensors]) => ({ path, tensors }));

    let adapter: LoraAdapter | undefined;
    if (options.adapter !== undefined) {
      try {
        checkAdapter(family, options.adapter);
        adapter = await readLoraAdapter(resolve(options.adapter), ckpt);
      } catch (e) {
        problems.push(problem(e));
      }
    }

    // allowMissing: the report comes back with every missing parameter; a mismatch still throws, with the report.
    let report: MappingReport | undefined;
    try {
      report = (await family.weights(ckpt, config, { allowMissing: true })).report;
    } catch (e) {
      if (e instanceof MappingError && e.report !== undefined) report = e.report;
      else problems.push(problem(e));
    }
    if (report === undefined) return done({ modelType: family.modelTypes[0], files, unread });

    const missing = report.missing.filter((m) => m.required);
    for (const m of missing) {
      const near = m.nearest.length > 0 ? ` Nearest present: ${m.nearest.map((n) => `'${n}'`).join(', ')}.` : '';
      problems.push({
        code: 'MISSING_TENSOR',
        where: `${m.component} parameter ${m.name}`,
        message: `${m.component} parameter '${m.name}' needs ${m.tensors.map((t) => `'${t}'`).join(', ')}, which the checkpoint lacks.${near}`,
      });
    }
    for (const m of report.mismatched) problems.push({ code: m.code, where: `${m.component} parameter ${m.name}`, message: m.message });
    // A missing or mismatched parameter leaves its other tensors (k and v beside a missing q) unused: named
    // as problems of their own only when nothing else is wrong, counted in the summary always.
    for (const u of problems.length === 0 ? report.unmapped : []) {
      problems.push({
        code: 'UNMAPPED_TENSOR',
        where: `${ckpt.info(u).file}: ${u}`,
        message: `checkpoint tensor '${u}' is used by no parameter of ${report.table} as config.json describes it (a different layout, or a config that does not match the weights).`,
      });
    }
    const components = new Map<string, InspectComponent>();
    for (const p of report.parameters) {
      const c = components.get(p.component) ?? { name: p.component, tensors: 0, parameters: 0 };
      components.set(p.component, { ...c, tensors: c.tensors + 1, parameters: c.parameters + p.shape.reduce((a, d) => a * d, 1) });
    }
    return done({
      modelType: family.modelTypes[0],
      files,
      unread,
      components: [...components.values()],
      tensors: {
        mapped: report.consumed.length,
        ignored: report.ignored.length,
        unused: report.unmapped,
        missing: missing.map((m) => m.name),
        mismatched: report.mismatched.map((m) => m.name),
      },
      adapter: adapter && { dir: adapter.dir, rank: adapter.rank, alpha: adapter.alpha, targets: adapter.targets.size },
    });
  } finally {
    await ckpt.close();
  }
}
