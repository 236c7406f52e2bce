// Console tables for the CLI.

/** Prints rows as an aligned table (numbers: 3 decimals below 100, integers above). */
export function table(rows: Array<Record<string, string | number>>): void {
  const headers = Object.keys(rows[0] ?? {});
  const cell = (v: string | number | undefined) => (typeof v === 'number' ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)) : (v ?? ''));
  const widths = headers.map((h) => Math.max(h.length, ...rows.map((r) => cell(r[h]).length)));
  const line = (cells: string[]) => '  ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(line(headers));
  for (const r of rows) console.log(line(headers.map((h) => cell(r[h]))));
}
