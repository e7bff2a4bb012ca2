// Formatting of ACP usage_update for the status bar: "ctx 62% · 124k/200k".

/** Token counts as people read them: 950, 12k, 124k, 1.2M. */
export function tokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  const m = n / 1_000_000;
  return `${m >= 10 || Number.isInteger(m) ? Math.round(m) : m.toFixed(1)}M`;
}

export interface Usage {
  used: number;
  size: number;
  cost?: { amount: number; currency: string } | null;
}

export function statusText(u: Usage): string {
  const pct = u.size > 0 ? Math.round((u.used / u.size) * 100) : 0;
  return `ctx ${pct}% · ${tokens(u.used)}/${tokens(u.size)}`;
}

export function statusTooltip(u: Usage): string {
  let s = `bridle context window: ${u.used.toLocaleString("en-US")} of ${u.size.toLocaleString("en-US")} tokens in use`;
  if (u.cost) s += `\nSession cost: ${u.cost.amount.toFixed(4)} ${u.cost.currency}`;
  return s;
}
