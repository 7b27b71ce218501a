/**
 * A component's parameter list, derived from its builder (vLLM's
 * `named_parameters()`: a module's parameters are what it uses, there is no
 * second list to keep in step). The builder runs once on recording weights
 * that hand out data-free placeholders; every `Graph.param` read is recorded
 * with the concrete shape the builder expects.
 */
import { type ParameterSpec, Weights } from './weights.js';

/**
 * The parameters `build` reads from its weights, in the order it first reads
 * them, with their expected shapes. `build` typically builds the component
 * into a fresh graph (or calls its standalone model helper), which is then
 * dropped.
 */
export function recordParameters(build: (weights: Weights) => unknown): ParameterSpec[] {
  const specs: ParameterSpec[] = [];
  build(Weights.recording(specs));
  return specs;
}

/**
 * `recordParameters` for a builder that takes several components' weights
 * (a vision tower and its projector in one graph): one list per component.
 */
export function recordComponentParameters<C extends string>(
  components: readonly C[],
  build: (weights: Record<C, Weights>) => unknown,
): Record<C, ParameterSpec[]> {
  const specs = {} as Record<C, ParameterSpec[]>;
  const weights = {} as Record<C, Weights>;
  for (const c of components) {
    specs[c] = [];
    weights[c] = Weights.recording(specs[c]);
  }
  build(weights);
  return specs;
}
