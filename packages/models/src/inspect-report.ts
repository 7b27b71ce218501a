// What `inspectCheckpoint` (./inspect.node.ts, Node only) reports, and the report as text: platform-free, so
// a report made elsewhere (a server, the CLI's --json) is formatted in any runtime.

/** One thing wrong with the directory: the error code, where (file, tensor, field or parameter), and the sentence. */
export interface InspectProblem {
  readonly code: string;
  readonly where: string;
  readonly message: string;
}

export interface InspectComponent {
  readonly name: string;
  /** Parameters the component's builder expects that the checkpoint provides. */
  readonly tensors: number;
  /** Their element count. */
  readonly parameters: number;
}

export interface InspectReport {
  readonly dir: string;
  /** config.json's model_type, once read. */
  readonly modelType: string | undefined;
  /** The .safetensors files whose headers were read, with their tensor counts. */
  readonly files: readonly { readonly path: string; readonly tensors: number }[];
  /**
   * Other .safetensors and index files in the directory, which a load does not read (transformers reads
   * model.safetensors, else the index's shards): a reference dump, an adapter. Listed, not problems.
   */
  readonly unread: readonly string[];
  readonly components: readonly InspectComponent[];
  /** Checkpoint tensors by what the mapping did with them. */
  readonly tensors: {
    readonly mapped: number;
    /** Tensors the table skips on purpose (a tied lm_head, multi-token-prediction heads). */
    readonly ignored: number;
    /** Neither used nor ignored: the table does not know them. */
    readonly unused: readonly string[];
    /** Required parameters with no tensor, by the checkpoint names they need. */
    readonly missing: readonly string[];
    /** Parameters whose tensors have the wrong shape or dtype. */
    readonly mismatched: readonly string[];
  };
  readonly adapter: { readonly dir: string; readonly rank: number; readonly alpha: number; readonly targets: number } | undefined;
  /** Every problem found, in the order checked (config, headers, adapter, mapping); empty when the checkpoint is good. */
  readonly problems: readonly InspectProblem[];
}

export interface InspectOptions {
  /** A PEFT LoRA adapter directory to check against the checkpoint (families with `supports.adapter`). */
  adapter?: string | undefined;
}

/** The report as lines of text: the summary, then each problem (`CODE where: message`), then the verdict. */
export function formatInspectReport(r: InspectReport): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const lines = [`checkpoint ${r.dir}`];
  if (r.modelType !== undefined) lines.push(`model_type ${r.modelType}`);
  for (const f of r.files) lines.push(`  file ${f.path}: ${n(f.tensors)} tensors, header read`);
  for (const f of r.unread) lines.push(`  file ${f}: not read (not a weight file of this checkpoint)`);
  for (const c of r.components) lines.push(`  ${c.name}: ${n(c.parameters)} parameters in ${n(c.tensors)} tensors`);
  if (r.components.length > 0) {
    const total = r.components.reduce((a, c) => a + c.parameters, 0);
    const t = r.tensors;
    lines.push(`  total: ${n(total)} parameters`);
    lines.push(
      `tensors: ${t.mapped} mapped, ${t.ignored} ignored, ${t.unused.length} unused, ${t.missing.length} parameters missing, ${t.mismatched.length} mismatched`,
    );
  }
  if (r.adapter) lines.push(`adapter ${r.adapter.dir}: r ${r.adapter.rank}, alpha ${r.adapter.alpha}, ${r.adapter.targets} target weights`);
  for (const p of r.problems) lines.push(`${p.code} ${p.where}: ${p.message}`);
  lines.push(r.problems.length === 0 ? 'ok' : `${r.problems.length} problem(s); first: ${r.problems[0]!.code} ${r.problems[0]!.where}`);
  return `${lines.join('\n')}\n`;
}
