/**
 * `count` with its noun, singular for exactly one: counted(1, 'skill') is "1 skill", counted(2,
 * 'memory', 'memories') "2 memories". Every count the CLI words goes through it.
 */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
