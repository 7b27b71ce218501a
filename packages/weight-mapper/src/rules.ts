/**
 * Name rules: matchers (for ignored keys) and renames (checkpoint name ->
 * canonical name), the three kinds vLLM's WeightsMapper knows: prefix,
 * substring and regex (with capture groups, `$1` in the replacement).
 */
import { MappingError } from './errors.js';

export type NameMatcher = { readonly prefix: string } | { readonly substring: string } | { readonly regex: RegExp };

export type RenameRule = NameMatcher & { readonly to: string };

export const prefix = (from: string, to: string): RenameRule => ({ prefix: from, to });
export const substring = (from: string, to: string): RenameRule => ({ substring: from, to });
export const regex = (pattern: RegExp, to: string): RenameRule => ({ regex: pattern, to });

export function matches(m: NameMatcher, name: string): boolean {
  if ('prefix' in m) return name.startsWith(m.prefix);
  if ('substring' in m) return name.includes(m.substring);
  m.regex.lastIndex = 0;
  return m.regex.test(name);
}

/** One rule applied to one name; a name the rule does not match comes back unchanged. */
export function applyRename(rule: RenameRule, name: string): string {
  if ('prefix' in rule) return name.startsWith(rule.prefix) ? rule.to + name.slice(rule.prefix.length) : name;
  // Like Python's str.replace in vLLM's mapper: every occurrence.
  if ('substring' in rule) return name.split(rule.substring).join(rule.to);
  rule.regex.lastIndex = 0;
  return name.replace(rule.regex, rule.to);
}

/** The rules applied in order, each to the previous one's result. */
export function canonicalName(rules: readonly RenameRule[], name: string): string {
  return rules.reduce((n, r) => applyRename(r, n), name);
}

/**
 * Canonical name -> checkpoint name for every tensor. Two checkpoint names
 * that land on the same canonical name (e.g. `vision_model.x` and
 * `model.vision_model.x`) are an error: which one is meant is ambiguous.
 */
export function canonicalNames(rules: readonly RenameRule[], names: Iterable<string>, where: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of names) {
    const canon = canonicalName(rules, name);
    const first = out.get(canon);
    if (first !== undefined) {
      throw new MappingError(
        'DUPLICATE_NAME',
        `checkpoint tensors '${first}' and '${name}' both map to '${canon}' in ${where}; expected one of them. Remove the duplicate from the checkpoint.`,
        { file: where, tensor: name },
      );
    }
    out.set(canon, name);
  }
  return out;
}
