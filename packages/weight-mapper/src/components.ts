/**
 * What a model table takes from each component: its parameter list (the
 * component's `expectedParameters`, a dry run of its builder: names and
 * shapes) and, where a rule needs it, a few fields of the component's parsed
 * config. The mapper knows checkpoint layouts, not the components' modules:
 * it never lists a parameter itself, it says where each listed one comes from.
 *
 * The configs are typed structurally (only the fields the rules read), so this
 * package depends on no component package: a component's parsed config
 * (`ErnieTextConfig`, `GraniteTextConfig`, ...) is passed as is.
 */
import type { ParameterSpec } from '@vlmkit/onnx-graph';
import type { ParamSpec } from './mapping.js';
import type { Source } from './source.js';

/** A component's parameter list: its `expectedParameters(config, options)`. */
export interface ComponentParameters {
  readonly parameters: readonly ParameterSpec[];
}

/** A component's parameter list and its parsed config (the fields the rules read). */
export interface ComponentWithConfig<Config> extends ComponentParameters {
  readonly config: Config;
}

/** Each listed parameter with its checkpoint source; the listed shape is checked against the checkpoint's. */
export function withSources(parameters: readonly ParameterSpec[], source: (name: string) => Source): ParamSpec[] {
  return parameters.map((p) => ({ name: p.name, shape: p.shape, source: source(p.name) }));
}
