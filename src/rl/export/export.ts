import type { ScoredSampleSource } from '../buffer/port.js';
import { toSample } from '../buffer/store.js';
import { wireDatum } from '../tinker/wire.js';
import { buildDatum, datumProblem } from '../train/datum.js';
import { chatTurn, type ChatTurn, type ExportFormat, type TurnSource } from './formats.js';

export interface ExportOptions {
  format: ExportFormat;
  /** the skill library's generation now: samples of older ones are left out unless `includeDropped` */
  currentGeneration: number;
  includeDropped: boolean;
}

export interface ExportReport {
  format: ExportFormat;
  /** scored samples looked at */
  scored: number;
  written: number;
  /** why samples were not written */
  skipped: { no_token_ids: number; unusable_tokens: number; not_good: number; neutral: number; unpaired: number; turn_gone: number };
}

/**
 * Scored samples as JSONL lines for another trainer: `datum` (Tinker datums as `rl/train` builds
 * them and `rl/tinker` sends them, from the sampled token ids), `sft` (the good answers as chat
 * conversations), `dpo` (a good and a bad answer to the same prompt, where both exist), `kto`
 * (every good and bad answer with its label). Lines are handed to `write` one at a time (awaited,
 * so a slow reader holds the export back rather than overflowing); only DPO
 * keeps the good and bad answers until it knows the pairs. The samples and turns come from either
 * store (RlBuffer and ConversationStore, or PgRlSamples and PgConversationReads on a team), so both
 * write the same lines for the same samples.
 */
export async function exportSamples(
  buffer: ScoredSampleSource,
  conversation: TurnSource,
  options: ExportOptions,
  write: (line: object) => unknown,
): Promise<ExportReport> {
  const report: ExportReport = {
    format: options.format,
    scored: 0,
    written: 0,
    skipped: { no_token_ids: 0, unusable_tokens: 0, not_good: 0, neutral: 0, unpaired: 0, turn_gone: 0 },
  };
  const emit = async (line: object) => {
    await write(line);
    report.written++;
  };
  const pending = new Map<string, { good: ChatTurn[]; bad: ChatTurn[] }>();
  for await (const row of buffer.scored(options.currentGeneration, options.includeDropped)) {
    report.scored++;
    const reward = row.reward!;
    if (options.format === 'datum') {
      const sample = row.prompt_tokens && row.response_tokens ? toSample(row) : undefined;
      if (!sample) report.skipped.no_token_ids++;
      else if (datumProblem(sample)) report.skipped.unusable_tokens++;
      // The judge's reward as the advantage: normalise it in the trainer (rl/train does, per batch).
      else await emit(wireDatum(buildDatum(sample, reward)));
      continue;
    }
    if (options.format === 'sft' && reward !== 1) {
      report.skipped.not_good++;
      continue;
    }
    if (reward === 0) {
      report.skipped.neutral++;
      continue;
    }
    const turn = await chatTurn(conversation, row.turn_id);
    if (!turn) {
      report.skipped.turn_gone++;
      continue;
    }
    if (options.format === 'sft') await emit({ messages: [...turn.prompt, turn.answer], turn_id: row.turn_id });
    else if (options.format === 'kto') await emit({ prompt: turn.prompt, completion: [turn.answer], label: reward === 1, turn_id: row.turn_id });
    else {
      const group = pending.get(turn.promptKey) ?? { good: [], bad: [] };
      (reward === 1 ? group.good : group.bad).push(turn);
      pending.set(turn.promptKey, group);
    }
  }
  for (const { good, bad } of pending.values()) {
    const pairs = Math.min(good.length, bad.length);
    for (let index = 0; index < pairs; index++) await emit({ prompt: good[index]!.prompt, chosen: [good[index]!.answer], rejected: [bad[index]!.answer] });
    report.skipped.unpaired += good.length + bad.length - 2 * pairs;
  }
  return report;
}
