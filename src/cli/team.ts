import type { Command } from 'commander';
import type { ForgottenScope } from '../store/postgres/forget-scope.js';
import { memberScope, MemberDirectory, type IssuedKey, type Member } from '../team/index.js';
import { personalMemory } from './memory.js';
import { CliExit, errorText, loadCliConfig, print } from './context.js';
import { onServedStore } from './store.js';
import type { Awaitable } from '../types/index.js';
import { counted } from './plural.js';

interface TeamOptions {
  config?: string;
  json?: boolean;
}

/** The member commands' view of either store: the personal one (synchronous) or the team store. */
interface MemberAdmin {
  add(name: string): Awaitable<IssuedKey>;
  rotateKey(name: string): Awaitable<IssuedKey>;
  remove(name: string): Awaitable<Member>;
  list(): Awaitable<Member[]>;
  hasMembers(): Awaitable<boolean>;
  /** Removes a member and forgets every memory of their scope: how many, and what else went with them. */
  removeAndForget(name: string): Awaitable<{ member: Member; forgotten: Forgotten }>;
}

/** What `remove-member --forget` took: the memories, and (team store) the traces counted apart. */
interface Forgotten {
  memories: number;
  /** The team store's other counts; the personal store reports memories only. */
  details?: Omit<ForgottenScope, 'units'>;
}

/**
 * Runs `action` on the members of the store config names: the team store when store.url (or
 * METACLAW_DATABASE_URL) is set, else the install's own database. Either way every running proxy
 * sees the change without a restart (the team store's nodes within about a second).
 */
function withMembers<A extends unknown[], T extends TeamOptions>(
  action: (members: MemberAdmin, ...args: [...A, T]) => Awaitable<void>,
): (...args: [...A, T]) => Promise<void> {
  return async (...args) => {
    const options = args.at(-1) as T;
    const config = loadCliConfig(options.config ? { config: options.config } : {});
    try {
      await onServedStore(config, {
        team: async (postgres, pool) => {
          const directory = new postgres.PgMemberDirectory(pool);
          const admin: MemberAdmin = {
            add: (name) => directory.add(name),
            rotateKey: (name) => directory.rotateKey(name),
            remove: (name) => directory.remove(name),
            list: () => directory.list(),
            hasMembers: () => directory.hasMembers(),
            removeAndForget: async (name) => {
              const { member, forgotten } = await directory.removeAndForget(name);
              const { units, ...details } = forgotten;
              return { member, forgotten: { memories: units, details } };
            },
          };
          await action(admin, ...args);
        },
        personal: async (db) => {
          const memory = personalMemory(config, db);
          const directory = new MemberDirectory(db);
          const removeAndForget = (name: string) => {
            const member = directory.remove(name);
            return { member, forgotten: { memories: memory.forgetScope(memberScope(member)) } };
          };
          await action(Object.assign(directory, { removeAndForget }), ...args);
        },
      });
    } catch (error) {
      if (error instanceof CliExit) throw error;
      throw new CliExit(errorText(error));
    }
  };
}

/** The team store's other counts, in one line: what else of the member left the store. */
function describeTraces(details: Omit<ForgottenScope, 'units'>): string {
  return (
    `Also gone: ${counted(details.vectors, 'vector')}, ${counted(details.searchKeys, 'search-key row')}, ${counted(details.stateKeys, 'extraction watermark')}, ${counted(details.jobs, 'unfinished memory job')}; ` +
    `their texts were scrubbed from ${counted(details.turns, 'turn summary', 'turn summaries')}, the stored bodies of ${counted(details.payloads, 'turn')} ` +
    `and ${details.skillRecords} skill evolution log lines and proposals.`
  );
}

function presentMember(member: Member): Record<string, unknown> {
  return {
    name: member.name,
    id: member.id,
    scope: memberScope(member),
    key: member.keyHint,
    created_at: new Date(member.createdAt).toISOString(),
    key_rotated_at: member.keyRotatedAt === null ? null : new Date(member.keyRotatedAt).toISOString(),
  };
}

/** The key is printed once, here; the store keeps only its hash. */
function printIssued(issued: IssuedKey, json: boolean | undefined, what: string): void {
  if (json) return print(JSON.stringify({ ...presentMember(issued.member), key: issued.key }, null, 2));
  print(`${what} ${issued.member.name} (memory scope ${memberScope(issued.member)}).`);
  print(`Key (shown once; MetaClaw keeps only its hash): ${issued.key}`);
  print('Their agent uses it as its API key for this proxy (Authorization: Bearer <key> or x-api-key).');
}

/** `metaclaw team …`: members who use the proxy with keys of their own, each with a private memory scope. */
export function registerTeamCommands(program: Command): void {
  const team = program.command('team').description('team members: per-member keys and private memory scopes (list, add-member, remove-member, rotate-key)');
  const common = (command: Command) => command.option('-c, --config <path>', 'config file').option('--json', 'machine-readable output');

  common(team.command('list').description('the members, with the start of each key')).action(
    withMembers<[], TeamOptions>(async (directory, options) => {
      const members = await directory.list();
      if (options.json) return print(JSON.stringify(members.map(presentMember), null, 2));
      if (members.length === 0) return print('No members: the proxy serves its owner alone (add one with `metaclaw team add-member NAME`).');
      const day = (time: number): string => new Date(time).toISOString().slice(0, 10);
      for (const member of members)
        print(
          `${member.name.padEnd(20)} ${member.keyHint.padEnd(14)} scope ${memberScope(member)}  since ${day(member.createdAt)}${member.keyRotatedAt !== null ? `, key rotated ${day(member.keyRotatedAt)}` : ''}`,
        );
    }),
  );

  common(team.command('add-member').description('add a member and print their key once').argument('<name>')).action(
    withMembers<[string], TeamOptions>(async (directory, name, options) => {
      // With members, a request without a key could be anyone: the owner keeps the proxy key
      // (their agents and this CLI already send it).
      if (loadCliConfig(options.config ? { config: options.config } : {}).values['proxy.api_key'] === '')
        throw new CliExit(
          "A team needs the owner's proxy key first: set proxy.api_key (`metaclaw config set proxy.api_key <key>`, or METACLAW_PROXY_API_KEY), then add members.",
        );
      const first = !(await directory.hasMembers());
      printIssued(await directory.add(name), options.json, 'Added');
      if (first && !options.json) print("From now on a request with a member key is served in that member's scope; the owner goes on using proxy.api_key.");
    }),
  );

  common(team.command('rotate-key').description('give a member a new key; the old one stops working at once').argument('<name>')).action(
    withMembers<[string], TeamOptions>(async (directory, name, options) => printIssued(await directory.rotateKey(name), options.json, 'New key for')),
  );

  common(
    team
      .command('remove-member')
      .description('remove a member; their key stops working at once')
      .argument('<name>')
      .option('--forget', 'also forget every memory in their scope, for good'),
  ).action(
    withMembers<[string], TeamOptions & { forget?: boolean }>(async (directory, name, options) => {
      const { member, forgotten } = options.forget ? await directory.removeAndForget(name) : { member: await directory.remove(name), forgotten: undefined };
      if (options.json)
        return print(
          JSON.stringify(
            {
              removed: member.name,
              scope: memberScope(member),
              forgotten_memories: forgotten?.memories ?? null,
              ...(forgotten?.details ? { forgotten: forgotten.details } : {}),
            },
            null,
            2,
          ),
        );
      print(`Removed ${member.name}; their key no longer works.`);
      print(
        forgotten === undefined
          ? `Their memories stay in scope ${memberScope(member)} (forget them with \`metaclaw memory forget-scope ${memberScope(member)} --yes\`).`
          : `Forgot ${counted(forgotten.memories, 'memory', 'memories')} of scope ${memberScope(member)}.`,
      );
      if (forgotten?.details) print(describeTraces(forgotten.details));
    }),
  );
}
