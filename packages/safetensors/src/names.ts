/**
 * Names of files inside a model directory, the same on every platform: '/'-separated and relative, as the hub
 * layout and an index's weight_map write them. A name that leaves the directory ('..' past the top, an
 * absolute path) is never opened, whatever the source.
 */
import { fail } from './errors.js';

/**
 * `name` with '.' and empty segments removed and '..' applied ('./a.safetensors' and 'a.safetensors' are one
 * file); undefined when it is absolute or leaves the directory.
 */
export function normalizeName(name: string): string | undefined {
  if (name === '' || name.includes('\0') || name.startsWith('/') || /^[A-Za-z]:[\\/]/.test(name) || name.startsWith('\\')) return undefined;
  const parts: string[] = [];
  for (const part of name.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else parts.push(part);
  }
  return parts.length === 0 ? undefined : parts.join('/');
}

/** `normalizeName`, or FILE_OUTSIDE_DIR naming the directory (`root`) the name leaves. */
export function checkedName(root: string, name: string): string {
  const normal = normalizeName(name);
  if (normal === undefined) {
    fail('FILE_OUTSIDE_DIR', `expected a file name relative to the model directory, found '${name}', which leaves it.`, { file: root });
  }
  return normal;
}

/** A name inside `root` for messages: a path, a URL or a picked folder's name, joined with '/'. */
export function joinName(root: string, name: string): string {
  return root.endsWith('/') ? `${root}${name}` : `${root}/${name}`;
}

/** The last segment of a '/'-separated name or URL path. */
export function baseName(name: string): string {
  const trimmed = name.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}
