// Short names for what the chat view's pickers show. Kept free of VS Code and
// the DOM so both sides can use them.

/**
 * The name a model picker shows: a model given as a file (the scripted
 * model's `scripted/<path to scenario>.json`) is shown by the file's base
 * name without its extension; a provider/model-id is shown as it is. The
 * full name goes in the tooltip.
 */
export function shortModelName(name: string): string {
  const slash = name.indexOf("/");
  if (slash < 0) return name;
  const rest = name.slice(slash + 1);
  // provider/model-id (or provider/org/model) stays; a path is cut to its file.
  // (a model id may end in ".1", so only a scenario's extensions count.)
  const isPath = /^(\.{0,2}[\\/]|~[\\/]|[A-Za-z]:[\\/])/.test(rest) || /\.(json|jsonc|ya?ml)$/i.test(rest);
  if (!isPath) return name;
  const base = rest.split(/[\\/]/).filter(Boolean).pop() ?? rest;
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base;
}

/** A path as the user thinks of it: relative to the workspace folder when inside it. */
export function relativePath(p: string, root: string | undefined): string {
  if (!root) return p;
  const r = root.replace(/[\\/]+$/, "");
  if (p === r) return ".";
  if (p.startsWith(r + "/") || p.startsWith(r + "\\")) return p.slice(r.length + 1);
  return p;
}
