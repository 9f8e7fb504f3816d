/** `--name VALUE` on a benchmark's command line, or `fallback`. */
export function textOption(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 && process.argv[at + 1] ? process.argv[at + 1]! : fallback;
}

/** `--name N` on a benchmark's command line, as a number, or `fallback`. */
export function numberOption(name: string, fallback: number): number {
  return Number(textOption(name, String(fallback)));
}
