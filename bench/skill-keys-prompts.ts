/**
 * How a labelled set's `model-keys.json` is made: the search keys job's prompt, rendered for the
 * set's bank exactly as `askSkillSearchKeys` renders it (batches of 8 skills, keys asked in en, zh
 * and ja: a user seen writing all three), is answered by a model that sees those files and nothing
 * else (never the set's requests), and the answers are collected into the set's folder. The
 * quality bench then runs the set a second time with the keys indexed (`--keys`).
 *
 *   node --import tsx bench/skill-keys-prompts.ts render dev5 /tmp/keys/dev5   # system.txt, batch-NN.txt
 *   (the model writes batch-NN.json beside each batch-NN.txt)
 *   node --import tsx bench/skill-keys-prompts.ts collect dev5 /tmp/keys/dev5 "the model's name"
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { silentLogger } from '../src/logging/index.js';
import { fillPrompt, loadPrompt } from '../src/prompts/index.js';
import { SkillLibrary } from '../src/skills/library.js';
import { renderForKeys, searchKeysOutputSchema } from '../src/skills/search-keys.js';
import { SKILL_SETS, type SkillSetName } from './skill-retrieval-quality.js';

const LANGUAGES = ['en', 'zh', 'ja'];
const BATCH = 8;

function render(set: SkillSetName, folder: string): void {
  const library = new SkillLibrary(SKILL_SETS[set].bank, silentLogger());
  library.scan();
  const prompt = loadPrompt('skill-search-keys');
  const skills = library.all();
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'system.txt'), `${prompt.system}\n`);
  for (let start = 0; start < skills.length; start += BATCH) {
    const batch = skills.slice(start, start + BATCH);
    const user = fillPrompt(prompt.user, { languages: LANGUAGES.join(', '), skills: batch.map((skill) => renderForKeys(skill, LANGUAGES)).join('\n\n') });
    writeFileSync(join(folder, `batch-${String(start / BATCH + 1).padStart(2, '0')}.txt`), `${user}\n`);
  }
  process.stdout.write(`${set}: ${skills.length} skills in ${Math.ceil(skills.length / BATCH)} batches, in ${folder}\n`);
}

function collect(set: SkillSetName, folder: string, model: string): void {
  const answers = readdirSync(folder)
    .filter((file) => /^batch-\d+\.json$/.test(file))
    .sort()
    .flatMap((file) => searchKeysOutputSchema.parse(JSON.parse(readFileSync(join(folder, file), 'utf8'))).skills);
  const target = join(dirname(SKILL_SETS[set].bank), 'model-keys.json');
  const recorded = {
    about: `Search keys for every skill of this bank in ${LANGUAGES.join(', ')}, written by ${model} from the search keys prompt alone (prompts/skill-search-keys.md, rendered by bench/skill-keys-prompts.ts); the model saw none of this set's requests.`,
    model,
    prompt_version: loadPrompt('skill-search-keys').version,
    skills: answers,
  };
  writeFileSync(target, `${JSON.stringify(recorded, null, 1)}\n`);
  process.stdout.write(`${target}: ${answers.length} answers\n`);
}

const [command, set, folder, model] = process.argv.slice(2);
if (!set || !(set in SKILL_SETS) || !folder || (command !== 'render' && command !== 'collect') || (command === 'collect' && !model))
  throw new Error('usage: skill-keys-prompts.ts render SET FOLDER | collect SET FOLDER MODEL');
if (command === 'render') render(set as SkillSetName, folder);
else collect(set as SkillSetName, folder, model!);
