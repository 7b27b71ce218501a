import { runGraphDemo } from './demo-graph.js';

const USAGE = `usage: vlmkit <command> [options]

commands:
  demo        build a small graph in TypeScript and run it on onnxruntime
  help        this text
`;

/** Runs the command line; returns the exit code. */
export async function main(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'demo': {
      void rest;
      const r = await runGraphDemo();
      out(`device: ${r.device} (${r.deviceReason})\n`);
      out(`output: [${Array.from(r.output.slice(0, 8), (v) => v.toFixed(4)).join(', ')}]\n`);
      out(`build ${r.buildMs.toFixed(1)} ms, run ${r.runMs.toFixed(1)} ms\n`);
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
      out(USAGE);
      return 0;
    default:
      out(`unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}
