import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import {
  diffVersions,
  loggedStatusText,
  ON_DISK,
  parseSkillFile,
  presentCredit,
  skillInjectionReason,
  skillLog,
  type ImportReport,
  type SkillCredit,
  type VersionRow,
} from '../skills/index.js';
import { SkillError } from '../errors.js';
import { CliExit, numberArgument, print } from './context.js';
import { withSkillsBackend, type SkillsBackend } from './skills-backend.js';
import { counted } from './plural.js';
import { skillsHealth } from './skills-health.js';

interface SkillsOptions {
  config?: string;
  json?: boolean;
}

/** An action on the library of the store the proxy serves from: the team store when store.url is set (skills-backend.ts). */
function withSkills<T extends SkillsOptions>(action: (skills: SkillsBackend, options: T) => void | Promise<void>): (options: T) => Promise<void> {
  return (options) => withSkillsBackend(options, (skills) => action(skills, options));
}

/** `metaclaw skills …`: the library, its credit, review and history. */
export function registerSkillsCommands(program: Command): void {
  const skills = program.command('skills').description('the skill library: list, edit, review, history, credit');
  const common = (command: Command) => command.option('-c, --config <path>', 'config file').option('--json', 'machine-readable output');

  common(
    skills
      .command('list')
      .description('every skill with how often it was injected and how those turns went')
      .option('--flagged', 'only skills flagged for bad outcomes'),
  ).action(
    withSkills<SkillsOptions & { flagged?: boolean }>(async (skills, options) => {
      const rows = (await skills.list()).filter((row) => !options.flagged || row.credit?.flagged);
      if (options.json)
        return print(
          JSON.stringify(
            rows.map(({ skill, credit }) => ({
              name: skill.name,
              category: skill.category,
              origin: skill.origin,
              version: skill.version,
              description: skill.description,
              credit: presentCredit(credit),
            })),
            null,
            2,
          ),
        );
      if (rows.length === 0)
        return print(options.flagged ? 'No flagged skills.' : 'The library is empty. Add the starter bank with `metaclaw skills install-starter`.');
      print(`${'NAME'.padEnd(34)} ${'CATEGORY'.padEnd(16)} ${'ORIGIN'.padEnd(8)} VER  INJECTED  SESSIONS  CORRECTED/ACCEPTED  JUDGE`);
      for (const { skill, credit } of rows)
        print(`${skill.name.padEnd(34)} ${skill.category.padEnd(16)} ${skill.origin.padEnd(8)} ${String(skill.version).padEnd(4)} ${figures(credit)}`);
      const invalid = skills.problems();
      print('');
      print(
        `${counted(rows.length, 'skill')}, generation ${await skills.generation()}${invalid.length > 0 ? `; ${counted(invalid.length, 'invalid file')} skipped (metaclaw skills doctor)` : ''}`,
      );
    }),
  );

  common(skills.command('show').description('one skill with its credit and versions').argument('<name>')).action((name: string, options: SkillsOptions) =>
    withSkills<SkillsOptions>(async (skills) => {
      const skill = await skills.get(name);
      if (!skill) {
        // A folder whose SKILL.md does not validate is no removed skill: say why it is skipped.
        const invalid = skills.problems().find((problem) => basename(dirname(problem.path)) === name);
        const recorded = await skills.versions(name);
        if (invalid)
          throw new CliExit(
            `${name} is skipped: its SKILL.md is invalid (${invalid.reason}). Fix ${invalid.path}${recorded.length > 0 ? `, or run \`metaclaw skills revert ${name}\` to write its last recorded version over it` : ''}.`,
          );
        // A removed skill keeps its versions: say so, and how to bring it back.
        const last = recorded.at(-1);
        if (last !== undefined)
          throw new CliExit(
            `No skill named ${name} in ${skills.where}: it was ${removedHow(last)} (${recorded.map((row) => `v${row.version} ${row.action}`).join(', ')}); \`metaclaw skills revert ${name}\` brings back the version before v${last.version}.`,
          );
        throw new CliExit(`No skill named ${name} in ${skills.where}.`);
      }
      const [credit, versions, searchKeys] = await Promise.all([skills.creditOf(name), skills.versions(name), skills.searchKeys(skill)]);
      if (options.json)
        return print(
          JSON.stringify(
            {
              ...skill,
              credit: presentCredit(credit),
              search_keys: searchKeys,
              versions: versions.map(({ content: _content, ...row }) => row),
            },
            null,
            2,
          ),
        );
      print(`${skill.name} (v${skill.version}, ${skill.category}, ${skill.origin})`);
      print(`  ${skill.description}`);
      print(`  file: ${skill.path}`);
      print(`  ${creditLine(credit)}`);
      if (credit?.flagged) print('  FLAGGED: keeps being injected into turns that go badly; consider editing or retiring it');
      if (skill.sourceSessions.length > 0) print(`  learned from sessions: ${skill.sourceSessions.join(', ')}`);
      if (versions.length > 0) print(`  versions: ${versions.map((row) => `v${row.version} ${row.action}`).join(', ')}`);
      for (const [language, keys] of Object.entries(searchKeys)) print(`  search keys (${language}): ${keys.join(', ')}`);
      print('');
      print(skill.body);
    })(options),
  );

  common(
    skills
      .command('add')
      .description('add a skill from a SKILL.md file (or a folder holding one)')
      .argument('<path>')
      .option('--overwrite', 'replace a skill of the same name')
      .option('--force', 'add it even if its text reads like prompt injection'),
  ).action((path: string, options: SkillsOptions & { overwrite?: boolean; force?: boolean }) =>
    withSkills<SkillsOptions>(async (skills) => {
      const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'SKILL.md') : path;
      if (!existsSync(file)) throw new CliExit(`${file} does not exist.`);
      const text = readFileSync(file, 'utf8');
      const folderName = basename(file) === 'SKILL.md' ? basename(dirname(file)) : basename(file).replace(/\.md$/i, '');
      const nameInFile = /^name:\s*["']?([^"'\n]+)/m.exec(text)?.[1]?.trim();
      const parsed = parseSkillFile(text, file, nameInFile ?? folderName);
      if ('reason' in parsed) throw new CliExit(`${file} is not a valid skill: ${parsed.reason}`);
      const { skill } = parsed;
      const draft = {
        name: skill.name,
        description: skill.description,
        category: skill.category,
        body: skill.body,
        origin: 'user' as const,
        extra: skill.extra,
      };
      // SkillsService.save decides: the same text again is "unchanged" (with or without --overwrite, no new version).
      const existed = (await skills.get(skill.name)) !== undefined;
      const result = await saved(skills.save(draft, 'cli add', { overwrite: options.overwrite ?? false, screen: !options.force }), {
        skill_exists: () => `A skill named ${skill.name} already exists (use --overwrite).`,
        suspicious_skill: () => `${file} reads like a prompt injection (${skillInjectionReason(skill)}); not added. ${FORCE_HINT}`,
      });
      if (result.action === 'unchanged')
        print(`Unchanged: ${skill.name} v${result.version} already says this; no new version (generation ${result.generation}).`);
      else print(`${existed ? 'Updated' : 'Added'} ${result.skill.name} v${result.version} (generation ${result.generation}).`);
    })(options),
  );

  common(skills.command('remove').description('remove a skill (its versions stay, so it can be restored)').argument('<name>')).action(
    (name: string, options: SkillsOptions) =>
      withSkills<SkillsOptions>(async (skills) => {
        const { removed, generation } = await skills.remove(name, 'cli remove');
        if (!removed) throw new CliExit(`No skill named ${name} in ${skills.where}.`);
        print(`Removed ${name} (generation ${generation}); \`metaclaw skills revert ${name}\` restores it.`);
      })(options),
  );

  common(
    skills
      .command('import')
      .description("import a folder of <name>/SKILL.md skills (MetaClaw's memory_data/skills, .claude/skills)")
      .argument('<folder>')
      .option('--overwrite', 'replace skills of the same name')
      .option('--force', 'import skills even if their text reads like prompt injection'),
  ).action((folder: string, options: SkillsOptions & { overwrite?: boolean; force?: boolean }) =>
    withSkills<SkillsOptions>(async (skills) => {
      // A mistyped path is a failure a script must see, not "Imported 0 skills" and exit 0.
      if (!existsSync(folder)) throw new CliExit(`${folder} does not exist.`);
      if (!statSync(folder).isDirectory()) throw new CliExit(`${folder} is not a folder (a single SKILL.md goes in with \`metaclaw skills add\`).`);
      const report = await skills.importFolder(folder, { overwrite: options.overwrite ?? false, force: options.force ?? false });
      printReport(report, options.json, 'Imported');
      if (report.suspicious.some((item) => !item.imported)) throw new CliExit('', 1);
    })(options),
  );

  common(skills.command('export').description('copy every skill folder to <folder>').argument('<folder>')).action((folder: string, options: SkillsOptions) =>
    withSkills<SkillsOptions>(async (skills) => {
      const exported = await skills.exportTo(folder);
      print(options.json ? JSON.stringify(exported) : `Exported ${counted(exported.length, 'skill')} to ${folder}.`);
    })(options),
  );

  common(
    skills.command('install-starter').description('install the starter bank of skills').option('--force', 'replace starter skills you already have'),
  ).action(
    withSkills<SkillsOptions & { force?: boolean }>(async (skills, options) =>
      printReport(await skills.installStarter({ force: options.force ?? false }), options.json, 'Installed'),
    ),
  );

  common(
    skills
      .command('log')
      .description(
        "recent skill evolutions with their proposals' decisions (evolution_history.jsonl; on a team, the team store's log) and changes made by hand in the folder",
      )
      .option('-n, --n <count>', 'how many', '10')
      .option('--full', 'show evidence and reasons'),
  ).action(
    withSkills<SkillsOptions & { n: string; full?: boolean }>(async (skills, options) => {
      const all = await skillLog(await skills.evolutions(), await skills.changesOnDisk(), (id) => skills.proposal(id), await skills.librarySwitches());
      const events = all.slice(-numberArgument(options.n, '-n', { min: 1 }));
      if (options.json) return print(JSON.stringify(events, null, 2));
      if (events.length === 0) return print('No skill evolutions yet.');
      for (const event of events) {
        print(
          event.library_switch
            ? `${event.timestamp}  library switched from ${event.library_switch.from} to ${event.library_switch.to} (generation ${event.generation})`
            : event.by_hand
              ? `${event.timestamp}  by hand in the skills folder (generation ${event.generation})`
              : `${event.timestamp}  session ${event.session_id ?? '-'}  (${event.reason ?? ''}, ${event.num_turns_analyzed == null ? '? turns' : counted(event.num_turns_analyzed, 'turn')}, ${counted(event.tokens ?? 0, 'token')})`,
        );
        for (const change of event.changes) {
          print(`  ${change.action} ${change.name}${change.merged_into ? ` (merged into ${change.merged_into})` : ''}: ${loggedStatusText(change)}`);
          if (options.full) {
            if (change.reason) print(`    why: ${change.reason}`);
            for (const evidence of change.evidence ?? []) print(`    evidence: ${evidence}`);
          }
        }
        if (event.more_changes) print(`  and ${counted(event.more_changes, 'more skill')}`);
        for (const rejected of event.rejected) print(`  rejected ${rejected.name}: ${rejected.reason}`);
      }
      const total = all.reduce((sum, event) => sum + (event.num_skills_generated ?? 0), 0);
      print('');
      print(`${counted(total, 'skill')} generated in total.`);
    }),
  );

  common(skills.command('pending').description('evolution proposals waiting for review (skills.review: manual)')).action(
    withSkills<SkillsOptions>(async (skills, options) => {
      const pending = await skills.pending();
      if (options.json)
        return print(
          JSON.stringify(
            pending.map((row) => ({ ...row, draft: JSON.parse(row.draft) as unknown, evidence: JSON.parse(row.evidence) as unknown })),
            null,
            2,
          ),
        );
      if (pending.length === 0) return print('No proposals waiting.');
      for (const row of pending) {
        const draft = JSON.parse(row.draft) as { description: string };
        print(`#${row.id}  ${row.action} ${row.name}  (session ${row.session_id ?? '-'}, ${new Date(row.created_at).toISOString()})`);
        print(indented(draft.description, '     '));
        for (const evidence of JSON.parse(row.evidence) as string[]) print(indented(`evidence: ${evidence}`, '     '));
      }
      print('');
      print('Apply with `metaclaw skills approve ID`, drop with `metaclaw skills reject ID`.');
    }),
  );

  common(skills.command('approve').description('apply a pending proposal').argument('<id>')).action((id: string, options: SkillsOptions) =>
    withSkills<SkillsOptions>(async (skills) => {
      const result = await skills.approve(numberArgument(id, 'proposal id', { min: 1 }));
      if (result.mergedInto === undefined) print(`Applied #${id}: ${result.action} ${result.skill.name} v${result.version} (generation ${result.generation}).`);
      else if (result.mergedInto === result.version)
        print(`Approved #${id}: ${result.skill.name} changed after it was proposed, and v${result.version} already holds what it adds; no new version.`);
      else
        print(
          `Applied #${id}: ${result.skill.name} changed after it was proposed (now v${result.mergedInto}), so its new lines were merged into that version: v${result.version} (generation ${result.generation}).`,
        );
    })(options),
  );

  common(skills.command('reject').description('drop a pending proposal').argument('<id>')).action((id: string, options: SkillsOptions) =>
    withSkills<SkillsOptions>(async (skills) => {
      const row = await skills.reject(numberArgument(id, 'proposal id', { min: 1 }));
      print(`Rejected #${id} (${row.action} ${row.name}).`);
    })(options),
  );

  common(
    skills
      .command('diff')
      .description('what changed between two versions of a skill (default: the last change)')
      .argument('<name>')
      .option('--from <version>')
      .option('--to <version>'),
  ).action((name: string, options: SkillsOptions & { from?: string; to?: string }) =>
    withSkills<SkillsOptions & { from?: string; to?: string }>(async (skills) => diff(await skills.versions(name), name, options))(options),
  );

  common(
    skills.command('revert').description('restore an earlier version (default: the one before the current)').argument('<name>').option('--to <version>'),
  ).action((name: string, options: SkillsOptions & { to?: string }) =>
    withSkills<SkillsOptions>(async (skills) => {
      const result = await skills.revert(name, options.to === undefined ? undefined : numberArgument(options.to, '--to', { min: 1 }));
      print(`Reverted ${name}: now v${result.version} (generation ${result.generation}).`);
    })(options),
  );

  common(skills.command('doctor').description('check every SKILL.md and the index; says what to fix')).action(
    withSkills<SkillsOptions>(async (skills, options) => {
      const {
        skills: count,
        invalid: problems,
        suspicious,
      } = skillsHealth(
        (await skills.list()).map(({ skill }) => skill),
        skills.problems(),
      );
      // The team store's own health is `metaclaw store status`'s: it holds no file that failed a write's checks.
      const integrity = skills.integrity() ?? ['ok'];
      if (options.json) print(JSON.stringify({ skills: count, invalid: problems, suspicious, database: integrity }, null, 2));
      else {
        print(`${counted(count, 'valid skill')} in ${skills.where}`);
        for (const problem of problems) print(`  INVALID ${problem.path}: ${problem.reason}`);
        for (const item of suspicious)
          print(
            `  SUSPICIOUS ${item.name} (${item.path}): reads like a prompt injection (${item.reason}); its text is escaped when injected, but remove or edit it unless you wrote it`,
          );
        print(skills.integrity() ? `database: ${integrity.join('; ')}` : 'database: the team store (`metaclaw store status` checks it)');
      }
      if (problems.length > 0 || suspicious.length > 0 || integrity[0] !== 'ok') throw new CliExit('', 1);
    }),
  );

  common(
    skills
      .command('prune')
      .description('retire skills that keep going badly or are never used')
      .option('--dry-run', 'only list the candidates')
      .option('--unused-days <days>', 'also list skills not injected for this many days', '0')
      .option('--yes', 'remove without asking'),
  ).action(
    withSkills<SkillsOptions & { dryRun?: boolean; unusedDays: string; yes?: boolean }>(async (skills, options) => {
      const unusedDays = numberArgument(options.unusedDays, '--unused-days', { min: 0 });
      const now = Date.now();
      const candidates = (await skills.list())
        .map(({ skill, credit }) => {
          if (credit?.flagged)
            return {
              name: skill.name,
              reason: `flagged: ${credit.corrected} corrected of ${credit.corrected + credit.accepted} followed-up turns${credit.judgeMean !== null ? `, judge mean ${credit.judgeMean.toFixed(2)}` : ''}`,
            };
          if (unusedDays > 0 && skill.origin === 'evolved' && (credit?.lastUsedAt ?? 0) < now - unusedDays * 86_400_000)
            return { name: skill.name, reason: `not injected in the last ${counted(unusedDays, 'day')}` };
          return undefined;
        })
        .filter((candidate): candidate is { name: string; reason: string } => candidate !== undefined);
      if (options.json) print(JSON.stringify(candidates, null, 2));
      else if (candidates.length === 0) print('No skills to retire.');
      else for (const candidate of candidates) print(`${candidate.name}: ${candidate.reason}`);
      if (options.dryRun || candidates.length === 0) return;
      if (!options.yes) throw new CliExit('Re-run with --yes to remove these skills (or --dry-run to only list them).', 1);
      for (const candidate of candidates) await skills.remove(candidate.name, 'cli prune');
      print(`Removed ${counted(candidates.length, 'skill')}.`);
    }),
  );
}

/** How a skill's last version removed it: by a command, or by a person deleting its folder (and when the library found it gone). */
function removedHow(last: VersionRow): string {
  if (last.source !== ON_DISK.deleted) return 'removed';
  return `deleted from the skills folder by hand (found gone ${new Date(last.created_at).toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
}

function diff(versions: VersionRow[], name: string, options: SkillsOptions & { from?: string; to?: string }): void {
  const { from, to, patch } = diffVersions(name, versions, {
    from: options.from === undefined ? undefined : numberArgument(options.from, '--from', { min: 1 }),
    to: options.to === undefined ? undefined : numberArgument(options.to, '--to', { min: 1 }),
  });
  if (options.json) print(JSON.stringify({ name, from, to, patch }));
  else print(patch.trimEnd());
}

/** The credit figures in words, for `skills show` (the list's columns need the list's header). */
function creditLine(credit: SkillCredit | undefined): string {
  const judge = credit?.judgeMean === null || credit === undefined ? '-' : credit.judgeMean.toFixed(2);
  return `injected ${counted(credit?.injected ?? 0, 'time')} in ${counted(credit?.sessions ?? 0, 'session')}; corrected ${credit?.corrected ?? 0}, accepted ${credit?.accepted ?? 0}; judge ${judge}`;
}

function figures(credit: SkillCredit | undefined): string {
  if (!credit) return `${'0'.padEnd(9)} ${'0'.padEnd(9)} ${'-'.padEnd(19)} -`;
  const judge = credit.judgeMean === null ? '-' : credit.judgeMean.toFixed(2);
  return `${String(credit.injected).padEnd(9)} ${String(credit.sessions).padEnd(9)} ${`${credit.corrected}/${credit.accepted}`.padEnd(19)} ${judge}${credit.flagged ? '  FLAGGED' : ''}`;
}

function printReport(report: ImportReport, json: boolean | undefined, verb: string): void {
  if (json) return print(JSON.stringify(report, null, 2));
  if (report.imported.length > 0 || report.unchanged.length === 0)
    print(`${verb} ${counted(report.imported.length, 'skill')}${report.generation === undefined ? '' : ` (generation ${report.generation})`}.`);
  if (report.imported.length > 0) print(`  ${report.imported.join(', ')}`);
  // Skills the library already holds as they are: counted, not listed (a re-run would list them all).
  if (report.unchanged.length > 0)
    print(`${report.unchanged.length} already ${verb === 'Installed' ? 'installed' : 'in the library'}, unchanged (no new version).`);
  if (report.skipped.length > 0) {
    print(`Skipped ${report.skipped.length}:`);
    for (const skipped of report.skipped) print(`  ${skipped.path}: ${skipped.reason}`);
  }
  const refused = report.suspicious.filter((item) => !item.imported);
  if (refused.length > 0) {
    print(`Refused ${refused.length} that read like prompt injection:`);
    for (const item of refused) print(`  ${item.path}: ${item.reason}`);
    print(FORCE_HINT);
  }
  for (const item of report.suspicious.filter((entry) => entry.imported))
    print(`Warning: ${item.name} reads like a prompt injection (${item.reason}); imported because of --force. Its text is escaped when injected.`);
}

/** `text` with every line under `prefix`, so a multi-line description or evidence keeps the block's indentation. */
function indented(text: string, prefix: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => `${prefix}${line}`.trimEnd())
    .join('\n');
}

/** A save's refusal (a SkillError by code) as this command words it. */
async function saved<T>(save: Promise<T>, messages: Readonly<Record<string, () => string>>): Promise<T> {
  try {
    return await save;
  } catch (error) {
    const message = error instanceof SkillError ? messages[error.code] : undefined;
    if (message !== undefined) throw new CliExit(message());
    throw error;
  }
}

const FORCE_HINT =
  "Read the skill first: if you trust it, re-run with --force (its text is still escaped when injected, so it cannot close MetaClaw's context block).";
