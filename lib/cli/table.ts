// Console tables for the CLI.

/**
 * The decimals of a numeric column, from its largest magnitude, so that a column never mixes "62.941" with "590"
 * (which reads as 62,941 next to 590): below 10, 3 decimals (metrics); below 1000, 1 decimal; above, whole numbers
 * with thousands separators.
 */
function columnFormat(values: Array<string | number | undefined>): (v: number) => string {
  const max = Math.max(0, ...values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)).map(Math.abs));
  if (max < 10) return (v) => v.toFixed(3);
  if (max < 1000) return (v) => v.toFixed(1);
  return (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : String(v));
}

/** Prints rows as an aligned table; each numeric column is formatted by {@link columnFormat}. */
export function table(rows: Array<Record<string, string | number>>): void {
  const headers = Object.keys(rows[0] ?? {});
  const formats = headers.map((h) => columnFormat(rows.map((r) => r[h])));
  const cell = (v: string | number | undefined, c: number) =>
    typeof v === 'number' ? (formats[c] as (v: number) => string)(v) : (v ?? '');
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => cell(r[h], c).length)));
  const line = (cells: string[]) =>
    '  ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(line(headers));
  for (const r of rows) console.log(line(headers.map((h, c) => cell(r[h], c))));
}
