import type pg from 'pg';
import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import { LearningMisconfiguredError, resolveLearningTarget, type TeamJobHandler } from '../../learning/index.js';
import { loadPrompt } from '../../prompts/index.js';
import type { SkillMirror } from '../../skills/mirror.js';
import { SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES } from '../../skills/recording-rules.js';
import { askSkillSearchKeys, SkillKeyCache } from '../../skills/search-keys.js';
import type { SkillsSettings } from '../../skills/service.js';
import type { CredentialMemory } from '../../upstream/index.js';
import type { PgConversationReads } from './conversation-reads.js';
import type { PgJobQueue } from './job-queue.js';
import { SKILLS_CHANNEL } from './skill-store.js';
import type { PgUserLanguages } from './team-languages.js';
import { DB_CLOCK_MS, setState } from './transaction.js';

const keyRows = z.array(z.object({ content_hash: z.string(), language: z.string(), keys: z.string(), prompt_version: z.coerce.number() }));

/**
 * A node's copy of the team store's skill search keys (`skill_search_keys`), which its skill mirror
 * indexes with each skill. Re-read whenever the node catches up with the skills channel: the
 * search keys job notifies it when it writes keys, as a skill write does.
 */
export class PgSkillKeys extends SkillKeyCache {
  private reading: Promise<void> = Promise.resolve();

  /**
   * Reads every key row again; the skills of `mirror` whose keys changed are indexed again with them.
   * One read at a time (the subscription and a job may both ask): an older read never lands after a newer one.
   */
  refresh(pool: pg.Pool, mirror?: SkillMirror): Promise<void> {
    const next = this.reading.then(() => this.read(pool, mirror));
    this.reading = next.catch(() => undefined);
    return next;
  }

  private async read(pool: pg.Pool, mirror: SkillMirror | undefined): Promise<void> {
    const result = await pool.query('SELECT content_hash, language, keys, prompt_version FROM skill_search_keys');
    const changed = this.load(keyRows.parse(result.rows));
    if (!mirror || changed.size === 0) return;
    const skills = mirror.all().filter((skill) => changed.has(skill.contentHash));
    if (skills.length > 0) mirror.index.update(skills, []);
  }
}

export interface PgSkillKeyJobDeps {
  pool: pg.Pool;
  queue: PgJobQueue;
  keys: PgSkillKeys;
  /** The node's mirror of the team's skills: the skills keys are written for. */
  library: SkillMirror;
  languages: PgUserLanguages;
  settings: Pick<SkillsSettings, 'evolver' | 'searchKeys'>;
  /** Where the model the team's agents last used is read (the default model of these calls, as on SQLite). */
  reads: Pick<PgConversationReads, 'latestModel'>;
  mainUpstream: UpstreamTarget | undefined;
  credentials: CredentialMemory;
}

/**
 * skills.search_keys on the team store: the personal install's job (SkillsService.writeSearchKeys,
 * same planning, prompt and validation) over the node's mirror and the languages of the team's
 * requests. The keys, the languages covered and a notification to every node's mirror are the
 * job's effect, written once.
 */
export function pgSkillSearchKeysHandler(deps: PgSkillKeyJobDeps): TeamJobHandler {
  return {
    kind: SEARCH_KEYS_JOB,
    usesLlm: true,
    async run(_payload, context) {
      // Queued before skills.search_keys was turned off: nothing is written, nothing is covered.
      if (!deps.settings.searchKeys) return undefined;
      const seen = await deps.languages.refresh();
      // With the mirror: whoever loads new keys first re-indexes the skills they belong to (a later load sees no change).
      await deps.keys.refresh(deps.pool, deps.library);
      const prompt = loadPrompt('skill-search-keys');
      const pending = deps.keys.pending(deps.library.all(), seen, prompt.version);
      const covered = (client: pg.PoolClient) => setState(client, SEARCH_KEYS_LANGUAGES, JSON.stringify(seen));
      if (pending.length === 0) return covered;
      const target = deps.mainUpstream
        ? resolveLearningTarget({ name: 'skill search keys', ...deps.settings.evolver }, deps.mainUpstream, deps.credentials, await deps.reads.latestModel())
        : undefined;
      if (!target) throw new LearningMisconfiguredError('no model for skill search keys: set rl.evolver_model or llm.model_id');
      const { written, asked } = await askSkillSearchKeys(context, target, prompt, pending);
      context.logger.info({ skills: asked.length, languages: seen, remaining: pending.length - asked.length }, 'skill search keys written');
      return async (client) => {
        await covered(client);
        for (const { skill, language, keys } of written)
          await client.query(
            `INSERT INTO skill_search_keys (content_hash, language, name, keys, prompt_version, model, created_at) VALUES ($1, $2, $3, $4, $5, $6, ${DB_CLOCK_MS})
             ON CONFLICT (content_hash, language) DO UPDATE SET name = excluded.name, keys = excluded.keys, prompt_version = excluded.prompt_version,
               model = excluded.model, created_at = excluded.created_at`,
            [skill.contentHash, language, skill.name, JSON.stringify(keys), prompt.version, target.model],
          );
        // The rest of a large library goes on in a job of its own (or, when this one is that job, in a rerun of it).
        if (pending.length > asked.length)
          await deps.queue.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: `${SEARCH_KEYS_JOB}:more`, rerunIfRunning: true }, client);
        if (written.some((answer) => answer.keys.length > 0)) await client.query('SELECT pg_notify($1, $2)', [SKILLS_CHANNEL, JSON.stringify({ keys: true })]);
      };
    },
  };
}

/**
 * Queues skills.search_keys when a skill of the node's mirror lacks keys in a language the team
 * writes (the personal install does so when its library changes); the queue's dedupe key makes
 * it one job however many nodes see the change.
 */
export async function queueSkillSearchKeys(deps: Pick<PgSkillKeyJobDeps, 'queue' | 'keys' | 'library' | 'languages' | 'settings'>): Promise<void> {
  if (!deps.settings.searchKeys) return;
  const languages = await deps.languages.refresh();
  if (languages.length === 0) return;
  if (deps.keys.pending(deps.library.all(), languages, loadPrompt('skill-search-keys').version).length > 0)
    await deps.queue.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 1_000, rerunIfRunning: true });
}
