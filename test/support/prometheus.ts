import assert from 'node:assert/strict';

/** Every sample of a Prometheus text exposition: `name{labels} value`, labels as a sorted string. */
export function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    assert.ok(match, `a valid exposition line: ${line}`);
    const labels = match[2]
      ? [...match[2].slice(1, -1).matchAll(/(\w+)="([^"]*)"/g)]
          .map((pair) => `${pair[1]}=${pair[2]}`)
          .sort()
          .join(',')
      : '';
    found.set(labels ? `${match[1]}{${labels}}` : match[1]!, Number(match[3]));
  }
  return found;
}
