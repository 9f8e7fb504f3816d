import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { silentLogger } from '../src/logging/index.js';
import { MIGRATIONS, openDatabase } from '../src/store/index.js';
import { SkillLibrary, SkillMirror, serializeSkill, type Skill, type SkillDraft } from '../src/skills/index.js';
import { SkillRetriever } from '../src/skills/retrieval.js';
import {
  migratePostgres,
  openPool,
  PgSkillProposals,
  PgSkillStore,
  SkillConflictError,
  SkillSubscription,
  type SubscriptionOptions,
} from '../src/store/postgres/index.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';
import { waitFor } from './support/proxy.js';

interface Node {
  readonly pool: ReturnType<typeof openPool>;
  readonly store: PgSkillStore;
  readonly mirror: SkillMirror;
  readonly subscription: SkillSubscription;
  readonly retriever: SkillRetriever;
  close(): Promise<void>;
}

const DEPLOY: SkillDraft = {
  name: 'release-deploy-checklist',
  description: 'Checklist for deploying a release of a web service to production: build, migrate, roll out, verify.',
  body: '# Release deploy checklist\n\n1. Build the release artifact from the tagged commit.\n2. Apply database migrations before switching traffic.\n3. Roll out to one instance, then the rest.',
};

const ROLLBACK: SkillDraft = {
  name: 'kubernetes-rollback',
  description: 'Roll back a broken Kubernetes deployment to its previous revision with kubectl rollout undo and check the pods come back healthy.',
  body: '# Kubernetes rollback\n\nRun `kubectl rollout history deployment/NAME`, then `kubectl rollout undo deployment/NAME --to-revision=N`, and watch `kubectl rollout status` until every pod is ready.',
};

const SPREADSHEET: SkillDraft = {
  name: 'spreadsheet-pivot-tables',
  description: 'Summarise spreadsheet data with pivot tables: group rows, aggregate columns, filter and chart the result.',
  body: '# Pivot tables\n\nSelect the data range, insert a pivot table, drag the grouping column to rows and the measure to values.',
};

test('migration 20 (team skills) is PostgreSQL-only: the SQLite schema is as before it, user_version 20', () => {
  const schema = (db: ReturnType<typeof openDatabase>) =>
    db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all();
  const earlier = openDatabase(':memory:', { migrations: MIGRATIONS.filter((migration) => migration.version < 20) });
  const at20 = openDatabase(':memory:', { migrations: MIGRATIONS.filter((migration) => migration.version <= 20) });
  try {
    assert.deepEqual(schema(at20), schema(earlier));
    assert.equal(at20.pragma('user_version', { simple: true }), 20);
    assert.match(MIGRATIONS.find((migration) => migration.version === 20)!.postgres, /CREATE TABLE skills/);
  } finally {
    earlier.close();
    at20.close();
  }
});

describe('skills in the team store (PostgreSQL)', { skip: postgresSkip() }, () => {
  let server: TestPostgres;
  let databases = 0;
  const pools: Array<{ end(): Promise<void> }> = [];
  const folders: string[] = [];

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.end().catch(() => undefined);
    server?.stop();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  async function freshStore(): Promise<string> {
    const url = server.createDatabase(`skills_${++databases}`);
    const pool = openPool(url, { max: 1 });
    await migratePostgres(pool);
    await pool.end();
    return url;
  }

  /** One proxy node: its own pool, mirror, listener and retriever. */
  async function node(url: string, name: string, options: SubscriptionOptions = {}): Promise<Node> {
    const pool = openPool(url, { max: 3 });
    pools.push(pool);
    const store = new PgSkillStore(pool);
    const mirror = new SkillMirror();
    const subscription = new SkillSubscription(url, store, mirror, { pollMs: 0, applicationName: `metaclaw-skills-${name}`, ...options });
    await subscription.start();
    const retriever = new SkillRetriever(mirror, mirror.index, undefined, undefined, { mode: 'template', topK: 3, minRelevance: 0.2 }, silentLogger());
    return { pool, store, mirror, subscription, retriever, close: () => subscription.stop() };
  }

  function tempFolder(): string {
    const folder = mkdtempSync(join(tmpdir(), 'metaclaw-team-skills-'));
    folders.push(folder);
    return folder;
  }

  const found = (target: Node, request: string) => target.retriever.retrieve(request).map((hit) => hit.skill.name);

  test('two nodes editing one skill at once: the loser gets a conflict, its retry keeps both edits as successive versions, and history shows both', async () => {
    const url = await freshStore();
    const [a, b] = [await node(url, 'a'), await node(url, 'b')];
    try {
      await a.store.write(DEPLOY, { basedOn: 0, source: 'test' });
      const [seenA, seenB] = await Promise.all([a.store.get(DEPLOY.name), b.store.get(DEPLOY.name)]);
      assert.equal(seenA!.version, 1);
      assert.equal(seenB!.version, 1);
      const lineA = '4. Run the smoke tests against the new instances.';
      const lineB = '5. Announce the release in the team channel.';
      const withLine = (skill: Skill, line: string): SkillDraft => ({ name: skill.name, description: skill.description, body: `${skill.body}\n${line}` });
      const race = await Promise.allSettled([
        a.store.write(withLine(seenA!.skill, lineA), { basedOn: 1, source: 'node a' }),
        b.store.write(withLine(seenB!.skill, lineB), { basedOn: 1, source: 'node b' }),
      ]);
      const won = race.filter((result) => result.status === 'fulfilled');
      const lost = race.filter((result) => result.status === 'rejected');
      assert.equal(won.length, 1, 'one write lands');
      assert.equal(lost.length, 1, 'the other is refused');
      const conflict = (lost[0] as PromiseRejectedResult).reason;
      assert.ok(conflict instanceof SkillConflictError, String(conflict));
      assert.deepEqual([conflict.basedOn, conflict.current], [1, 2]);
      const loserIsA = race[0].status === 'rejected';
      const loser = loserIsA ? a : b;
      const retried = await loser.store.editWithRetry(DEPLOY.name, (current) => current && withLine(current.skill, loserIsA ? lineA : lineB), {
        source: 'retry',
      });
      assert.equal(retried!.version, 3);
      const final = (await b.store.get(DEPLOY.name))!;
      assert.ok(final.skill.body.includes(lineA) && final.skill.body.includes(lineB), final.skill.body);
      const history = await a.store.versions(DEPLOY.name);
      assert.deepEqual(
        history.map((row) => [row.version, row.action]),
        [
          [1, 'create'],
          [2, 'update'],
          [3, 'update'],
        ],
      );
      assert.ok(history[1]!.content.includes(loserIsA ? lineB : lineA), 'version 2 is the winner’s edit');
      assert.ok(history[2]!.content.includes(lineA) && history[2]!.content.includes(lineB), 'version 3 holds both');

      // Two evolutions planned against the same version, applied at once on two nodes: both land.
      const plan = (line: string, session: string) => ({
        action: 'update' as const,
        draft: { ...withLine(final.skill, line), sourceSessions: [session] },
        evidence: [],
        reason: undefined,
      });
      const evolved = await Promise.all([
        a.store.applyPlanned(plan('6. Keep the previous release warm for ten minutes.', 's-a'), 3, 'session s-a'),
        b.store.applyPlanned(plan('7. Close the deploy ticket with the release notes.', 's-b'), 3, 'session s-b'),
      ]);
      assert.deepEqual(evolved.map((write) => write.version).sort(), [4, 5]);
      const evolvedBody = (await a.store.get(DEPLOY.name))!.skill.body;
      assert.match(evolvedBody, /previous release warm/);
      assert.match(evolvedBody, /deploy ticket/);
      assert.equal(await a.store.generation(), 5, 'one generation per accepted change');

      // Two evolutions creating the same new skill at once: the second lands as an edit of the first.
      const create = (line: string, session: string) => ({
        action: 'create' as const,
        draft: {
          name: 'incident-postmortem',
          description: 'Write a blameless postmortem after a production incident.',
          body: `# Postmortem\n\n${line}`,
          sourceSessions: [session],
        },
        evidence: [],
        reason: undefined,
      });
      const created = await Promise.all([
        a.store.applyPlanned(create('List the timeline from the first alert to recovery.', 's-c'), undefined, 'session s-c'),
        b.store.applyPlanned(create('Name the contributing causes without naming people.', 's-d'), undefined, 'session s-d'),
      ]);
      assert.deepEqual(created.map((write) => `${write.action} v${write.version}`).sort(), ['create v1', 'update v2']);
      const postmortem = (await b.store.get('incident-postmortem'))!.skill.body;
      assert.match(postmortem, /timeline from the first alert/);
      assert.match(postmortem, /contributing causes/);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('six writers on two nodes appending to one skill at once: every edit is kept, one version each, and the other node ends on the last version', async () => {
    const url = await freshStore();
    const [a, b] = [await node(url, 'a'), await node(url, 'b')];
    try {
      await a.store.write(DEPLOY, { basedOn: 0, source: 'test' });
      const lines = Array.from({ length: 6 }, (_, index) => `- Note ${index} from writer ${index}.`);
      await Promise.all(
        lines.map((line, index) =>
          (index % 2 === 0 ? a : b).store.editWithRetry(
            DEPLOY.name,
            (current) => current && { name: DEPLOY.name, description: current.skill.description, body: `${current.skill.body}\n${line}` },
            { source: `writer ${index}` },
          ),
        ),
      );
      const final = (await a.store.get(DEPLOY.name))!;
      assert.equal(final.version, 7);
      for (const line of lines) assert.ok(final.skill.body.includes(line), `${line} kept`);
      assert.deepEqual(
        (await b.store.versions(DEPLOY.name)).map((row) => row.version),
        [1, 2, 3, 4, 5, 6, 7],
      );
      await waitFor(() => b.mirror.get(DEPLOY.name)?.version === 7, 2_000, 10);
      assert.equal(b.mirror.generation, 7);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("node B's in-memory index sees node A's new, edited and removed skill within a second through NOTIFY, and B's retrieval finds the new skill", async () => {
    const url = await freshStore();
    const [a, b] = [await node(url, 'a'), await node(url, 'b')];
    try {
      await a.store.write(DEPLOY, { basedOn: 0, source: 'test' });
      await a.store.write(SPREADSHEET, { basedOn: 0, source: 'test' });
      await waitFor(() => b.mirror.size === 2, 2_000, 10);
      const request = 'how do I roll back a broken kubernetes deployment to the previous revision';
      assert.deepEqual(found(b, request), []);

      const started = Date.now();
      await a.store.write(ROLLBACK, { basedOn: 0, source: 'test' });
      await waitFor(() => b.mirror.get(ROLLBACK.name), 1_000, 5);
      const delay = Date.now() - started;
      assert.deepEqual(found(b, request), [ROLLBACK.name], `found after ${delay} ms`);
      assert.equal(b.mirror.generation, 3);

      await a.store.write({ ...ROLLBACK, description: `${ROLLBACK.description} Also for Helm releases.` }, { basedOn: 1, source: 'edit' });
      await waitFor(() => b.mirror.get(ROLLBACK.name)?.version === 2, 1_000, 5);
      assert.match(b.mirror.get(ROLLBACK.name)!.description, /Helm releases/);

      await a.store.remove(ROLLBACK.name, { basedOn: 2, source: 'remove' });
      await waitFor(() => !b.mirror.get(ROLLBACK.name), 1_000, 5);
      assert.deepEqual(found(b, request), []);
      assert.equal(b.mirror.size, 2);
      assert.equal(b.subscription.reconnects, 0, 'all of it over the one listening connection');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a node whose listening connection was terminated catches up on reconnecting: a skill written and one removed while it was cut off', async () => {
    const url = await freshStore();
    const a = await node(url, 'a');
    const b = await node(url, 'b', { reconnectDelayMs: 300 });
    try {
      await a.store.write(DEPLOY, { basedOn: 0, source: 'test' });
      await waitFor(() => b.mirror.get(DEPLOY.name), 2_000, 10);
      // pg_terminate_backend with a timeout returns once the backend is gone: B hears nothing of what follows.
      const killed = await a.pool.query<{ done: boolean }>(
        "SELECT pg_terminate_backend(pid, 5000) AS done FROM pg_stat_activity WHERE application_name = 'metaclaw-skills-b'",
      );
      assert.deepEqual(
        killed.rows.map((row) => row.done),
        [true],
      );
      await a.store.write(ROLLBACK, { basedOn: 0, source: 'while b was cut off' });
      await a.store.remove(DEPLOY.name, { basedOn: 1, source: 'while b was cut off' });
      await waitFor(() => b.mirror.get(ROLLBACK.name) && !b.mirror.get(DEPLOY.name), 5_000, 20);
      assert.ok(b.subscription.reconnects >= 1, 'B reconnected');
      assert.equal(b.mirror.generation, 3);
      assert.deepEqual(found(b, 'roll back the kubernetes deployment with kubectl'), [ROLLBACK.name]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a failed read of the changes is tried again, so a node does not stay stale while its listening connection stays up', async () => {
    const url = await freshStore();
    const a = await node(url, 'a');
    const pool = openPool(url, { max: 2 });
    pools.push(pool);
    const store = new PgSkillStore(pool);
    const mirror = new SkillMirror();
    let failures = 0;
    // B's reads fail once after start: the pool is briefly exhausted, or a statement timed out.
    const flaky = Object.assign(Object.create(store) as PgSkillStore, {
      changesSince: (generation: number) =>
        mirror.generation > 0 || failures++ > 0 ? store.changesSince(generation) : Promise.reject(new Error('read failed')),
    });
    await a.store.write(DEPLOY, { basedOn: 0, source: 'before b' });
    const subscription = new SkillSubscription(url, flaky, mirror, { pollMs: 0, maxReconnectDelayMs: 200 });
    try {
      await subscription.start();
      assert.equal(mirror.size, 0, 'the first read failed');
      await waitFor(() => mirror.get(DEPLOY.name), 2_000, 10);
      assert.equal(subscription.reconnects, 0, 'read again over the same connection');
    } finally {
      await subscription.stop();
      await a.close();
    }
  });

  test('after the server itself restarts, a node listens again and hears the next change', async () => {
    const url = await freshStore();
    const a = await node(url, 'a');
    const b = await node(url, 'b', { reconnectDelayMs: 100, maxReconnectDelayMs: 300 });
    try {
      server.pause();
      await waitFor(() => !b.subscription.listening, 5_000, 20);
      server.resume();
      await waitFor(() => b.subscription.listening, 10_000, 20);
      await a.store.write(SPREADSHEET, { basedOn: 0, source: 'after the restart' });
      await waitFor(() => b.mirror.get(SPREADSHEET.name), 2_000, 10);
    } finally {
      server.resume();
      await a.close();
      await b.close();
    }
  });

  test('export writes SKILL.md folders the personal library loads unchanged, and import → export gives back the same files byte for byte', async () => {
    const url = await freshStore();
    const a = await node(url, 'a');
    try {
      const source = tempFolder();
      const files: Record<string, string> = {
        'pdf-form-filling': serializeSkill({
          name: 'pdf-form-filling',
          description: 'Fill PDF forms: read the fields, fill them from data: keep the layout.',
          category: 'documents',
          body: '# PDF forms\n\nList the fields with `pdftk form.pdf dump_data_fields`, then fill them.',
          version: 3,
          origin: 'evolved',
          createdAt: '2026-01-02T03:04:05.000Z',
          updatedAt: '2026-02-03T04:05:06.000Z',
          generation: 7,
          sourceSessions: ['s1', 's2'],
          extra: { license: 'MIT', 'allowed-tools': ['Bash', 'Read'] },
        }),
        'commit-message-zh': serializeSkill({
          name: 'commit-message-zh',
          description: '用中文写清楚的提交信息：先说改了什么，再说为什么。',
          body: '# 提交信息\n\n第一行不超过五十个字，空一行后写原因。',
          version: 1,
          origin: 'user',
          createdAt: '2026-03-01T00:00:00.000Z',
          updatedAt: '2026-03-01T00:00:00.000Z',
        }),
      };
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(join(source, name));
        writeFileSync(join(source, name, 'SKILL.md'), text);
      }
      mkdirSync(join(source, 'broken'));
      writeFileSync(join(source, 'broken', 'SKILL.md'), 'no frontmatter here');
      // Files beside a SKILL.md travel with it (a script keeps its executable bit); a link is not followed.
      mkdirSync(join(source, 'pdf-form-filling', 'scripts'));
      mkdirSync(join(source, 'pdf-form-filling', 'references'));
      const script = '#!/bin/sh\npdftk "$1" dump_data_fields\n';
      writeFileSync(join(source, 'pdf-form-filling', 'scripts', 'fields.sh'), script, { mode: 0o755 });
      chmodSync(join(source, 'pdf-form-filling', 'scripts', 'fields.sh'), 0o755);
      const reference = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10]);
      writeFileSync(join(source, 'pdf-form-filling', 'references', 'sample.pdf'), reference);
      symlinkSync('/etc/hostname', join(source, 'pdf-form-filling', 'linked'));

      const report = await a.store.importFolder(source);
      assert.deepEqual(report.imported.sort(), ['commit-message-zh', 'pdf-form-filling']);
      assert.deepEqual(
        report.skipped.map((entry) => entry.path),
        [join(source, 'broken', 'SKILL.md')],
      );
      const generation = await a.store.generation();
      const again = await a.store.importFolder(source);
      assert.deepEqual([again.imported, again.generation], [[], undefined], 'existing skills are kept without overwrite');
      assert.equal(await a.store.generation(), generation, 'and an import that wrote nothing is no change of the library');
      await a.store.write(ROLLBACK, { basedOn: 0, source: 'written in team mode' });

      const out = tempFolder();
      assert.deepEqual(await a.store.exportSkills(out), ['commit-message-zh', 'kubernetes-rollback', 'pdf-form-filling']);
      assert.deepEqual(readdirSync(out).sort(), ['commit-message-zh', 'kubernetes-rollback', 'pdf-form-filling']);
      for (const [name, text] of Object.entries(files))
        assert.equal(readFileSync(join(out, name, 'SKILL.md'), 'utf8'), text, `${name} round-trips byte for byte`);
      assert.equal(readFileSync(join(out, 'pdf-form-filling', 'scripts', 'fields.sh'), 'utf8'), script);
      assert.equal(statSync(join(out, 'pdf-form-filling', 'scripts', 'fields.sh')).mode & 0o777, 0o755, 'the script is still executable');
      assert.deepEqual(readFileSync(join(out, 'pdf-form-filling', 'references', 'sample.pdf')), reference);
      assert.ok(!existsSync(join(out, 'pdf-form-filling', 'linked')), 'a link is not followed');
      assert.deepEqual(readdirSync(join(out, 'commit-message-zh')), ['SKILL.md']);

      const library = new SkillLibrary(out, silentLogger());
      library.scan();
      assert.deepEqual(library.problems(), []);
      await waitFor(() => a.mirror.size === 3, 2_000, 10);
      const withoutPath = ({ path: _path, ...skill }: Skill) => skill;
      for (const skill of a.mirror.all())
        assert.deepEqual(withoutPath(library.get(skill.name)!), withoutPath(skill), `${skill.name} loads as the team store holds it`);
      assert.equal(library.get('pdf-form-filling')!.version, 3, 'imported with its own version');
      // Overwrite with a changed text is the next version; a file saying what the store holds is no change (as on the personal library).
      const edited = files['pdf-form-filling']!.replace('then fill them.', 'then fill them and flatten the form.');
      writeFileSync(join(source, 'pdf-form-filling', 'SKILL.md'), edited);
      const replaced = await a.store.importFolder(source, { overwrite: true });
      assert.deepEqual([replaced.imported, replaced.unchanged], [['pdf-form-filling'], ['commit-message-zh']]);
      const next = (await a.store.get('pdf-form-filling'))!;
      assert.deepEqual(
        [next.version, next.skill.origin, next.skill.extra],
        [4, 'imported', { license: 'MIT', 'allowed-tools': ['Bash', 'Read'] }],
        'overwrite is the next version',
      );
    } finally {
      await a.close();
    }
  });

  test('a pending proposal is decided once across nodes, and approving it after another node changed the skill merges it into that version, keeping both', async () => {
    const url = await freshStore();
    const a = await node(url, 'a');
    const b = await node(url, 'b');
    try {
      await a.store.write(DEPLOY, { basedOn: 0, source: 'test' });
      const proposalsA = new PgSkillProposals(a.pool, a.store);
      const proposalsB = new PgSkillProposals(b.pool, b.store);
      const id = await proposalsA.add('s-1', {
        action: 'update',
        draft: { ...DEPLOY, body: `${DEPLOY.body}\n4. Watch the error rate for fifteen minutes.` },
        evidence: ['the deploy broke at night'],
        reason: 'missing monitoring step',
      });
      assert.deepEqual(
        (await proposalsB.pending()).map((row) => row.id),
        [id],
      );
      await b.store.write({ ...DEPLOY, body: `${DEPLOY.body}\n4. Notify support.` }, { basedOn: 1, source: 'meanwhile' });
      const other = await proposalsA.add('s-2', { action: 'update', draft: DEPLOY, evidence: [], reason: 'same text' });
      const decisions = await Promise.all([proposalsA.decide(other, 'rejected'), proposalsB.decide(other, 'approved')]);
      assert.deepEqual(decisions.filter(Boolean).length, 1, 'exactly one node decides it');
      const approved = await proposalsA.approve(id);
      assert.deepEqual([approved.version, approved.mergedInto], [3, 2]);
      assert.match(approved.skill.body, /4\. Notify support\.[\s\S]*Watch the error rate/, 'the edit made meanwhile is kept');
      assert.equal((await proposalsB.get(id))!.status, 'approved');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
