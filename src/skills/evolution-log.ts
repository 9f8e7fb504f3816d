import { z } from 'zod';
import { ON_DISK, type ChangeOnDisk, type LibrarySwitch } from './history.js';
import type { ProposalRow } from './proposals.js';

/**
 * One line of evolution_history.jsonl (MetaClaw's format, also written by older versions): read
 * leniently, since a hand-edited or foreign line must not stop `skills log` or the dashboard.
 */
const historyLineSchema = z.looseObject({
  timestamp: z.string().catch('?'),
  session_id: z.string().nullish().catch(null),
  reason: z.string().nullish().catch(null),
  num_turns_analyzed: z.number().nullish().catch(null),
  num_skills_generated: z.number().nullish().catch(null),
  tokens: z.number().nullish().catch(null),
  changes: z
    .array(
      z.looseObject({
        action: z.string().catch('?'),
        name: z.string().catch('?'),
        status: z.string().catch('?'),
        evidence: z.array(z.string()).optional().catch(undefined),
        reason: z.string().nullish().catch(null),
        merged_into: z.string().nullish().catch(null),
      }),
    )
    .catch([]),
  rejected: z.array(z.looseObject({ name: z.string().catch('?'), reason: z.string().catch('') })).catch([]),
});

export type HistoryLine = z.infer<typeof historyLineSchema>;
export type LoggedChange = HistoryLine['changes'][number] & {
  /** What became of a proposal the line logged as "pending #N", once decided (read from the proposal). */
  decision?: { status: string; decided_at: string | null };
  /** The version a change made by hand in the folder was recorded as. */
  version?: number;
};
/** An entry of the log: an evolution, the changes one read of the folder found made by hand (`by_hand`), or a switch of skills.dir. */
export type LoggedEvent = HistoryLine & {
  changes: LoggedChange[];
  by_hand?: true;
  library_switch?: { from: string; to: string };
  generation?: number;
  /** Changes of a by-hand entry past the first HAND_CHANGES_SHOWN (a library first read with many skills put in by hand). */
  more_changes?: number;
};

/** The changes one by-hand entry lists; the rest are counted. */
const HAND_CHANGES_SHOWN = 20;

export function readHistoryLine(line: string): HistoryLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = {};
  }
  const read = historyLineSchema.safeParse(parsed);
  return read.success ? read.data : historyLineSchema.parse({});
}

const HAND_ACTION: Record<string, string> = { [ON_DISK.edited]: 'edit', [ON_DISK.added]: 'add', [ON_DISK.deleted]: 'remove' };

/**
 * The skill log, oldest first: the evolution log's lines with the changes made by hand in the folder
 * (versions recorded ON_DISK, one entry per generation, i.e. per read of the folder) and the
 * switches of skills.dir from or to this folder placed by time.
 * The lines are records of the evolutions and stay as they were; what became of a proposal one
 * logged is read from the proposal (`proposal`), so the log says it was approved or rejected, and when.
 */
export async function skillLog(
  lines: readonly string[],
  onDisk: readonly ChangeOnDisk[],
  proposal: (id: number) => ProposalRow | undefined | Promise<ProposalRow | undefined>,
  switches: readonly LibrarySwitch[] = [],
): Promise<LoggedEvent[]> {
  const evolutions = await Promise.all(lines.map(readHistoryLine).map((event) => withDecisions(event, proposal)));
  // A switch first among entries of one time: hand changes it found are recorded after it.
  const byHand = [...switches.map(switchEvent), ...handEvents(onDisk)].sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  const merged: LoggedEvent[] = [];
  for (const event of evolutions) {
    // A line without a readable time stays where the file has it.
    while (byHand.length > 0 && event.timestamp !== '?' && byHand[0]!.timestamp < event.timestamp) merged.push(byHand.shift()!);
    merged.push(event);
  }
  return [...merged, ...byHand];
}

async function withDecisions(event: HistoryLine, proposal: Parameters<typeof skillLog>[2]): Promise<LoggedEvent> {
  return {
    ...event,
    changes: await Promise.all(
      event.changes.map(async (change): Promise<LoggedChange> => {
        const id = /^pending #(\d+)$/.exec(change.status)?.[1];
        const row = id === undefined ? undefined : await proposal(Number(id));
        if (!row || row.status === 'pending') return change;
        const decidedAt = row.decided_at === null ? null : new Date(row.decided_at).toISOString();
        return { ...change, decision: { status: row.status, decided_at: decidedAt } };
      }),
    ),
  };
}

/** An entry of the log that no session's evolution made: a switch of skills.dir, or the changes one read found made by hand. */
function libraryEvent(createdAt: number, generation: number, reason: string, kind: Pick<LoggedEvent, 'by_hand' | 'library_switch'>): LoggedEvent {
  return {
    timestamp: new Date(createdAt).toISOString(),
    ...kind,
    generation,
    session_id: null,
    reason,
    num_turns_analyzed: null,
    num_skills_generated: null,
    tokens: null,
    changes: [],
    rejected: [],
  };
}

function switchEvent(entry: LibrarySwitch): LoggedEvent {
  return libraryEvent(entry.created_at, entry.generation, `library switched from ${entry.from} to ${entry.to}`, {
    library_switch: { from: entry.from, to: entry.to },
  });
}

function handEvents(rows: readonly ChangeOnDisk[]): LoggedEvent[] {
  const events = new Map<number, LoggedEvent>();
  for (const row of rows) {
    let event = events.get(row.generation);
    if (!event) {
      event = libraryEvent(row.created_at, row.generation, 'changed by hand in the skills folder', { by_hand: true });
      events.set(row.generation, event);
    }
    if (event.changes.length < HAND_CHANGES_SHOWN)
      event.changes.push({ action: HAND_ACTION[row.source ?? ''] ?? row.action, name: row.name, status: row.source ?? '', version: row.version });
    else event.more_changes = (event.more_changes ?? 0) + 1;
  }
  return [...events.values()];
}

/** A logged change's status in words: a proposal's decision once it was made, a hand change's version. */
export function loggedStatusText(change: LoggedChange): string {
  if (change.version !== undefined) return `${change.status} (v${change.version})`;
  if (!change.decision) return change.status;
  const when = change.decision.decided_at === null ? '' : ` ${change.decision.decided_at.slice(0, 16).replace('T', ' ')} UTC`;
  return `${change.decision.status}${when} (proposal ${change.status.replace(/^pending /, '')})`;
}
