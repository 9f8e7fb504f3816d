import { hash as digest } from 'node:crypto';
import type { SegmentSink, SegmentSource } from './segment-table.js';

/**
 * A message list is stored as a chain of list nodes: a node holds the hashes of the items it adds
 * (`m`) and points to the node of the list it extends (`p`). An agent resends its whole history
 * every turn, so each turn's list is "the previous turn's list + the new messages": one small node
 * a turn instead of a hash per message per turn, which grew with the square of the history.
 * Nodes live with the other parts in payload_segments and are counted like them (segment-table.ts).
 */
export interface ListNode {
  p?: string;
  m: string[];
}

/** Every part hash is a SHA-256 in base64url: 43 characters, so a list's hashes joined are sliceable. */
const HASH_CHARS = 43;
/** Chain ends remembered per chain (a list rarely falls back further than the last few turns). */
const KEPT_ENDS = 8;
/** Chains remembered per session: the agent's own, the forwarded one when translated, side turns. */
const CHAINS_PER_SESSION = 4;
/** Sessions remembered (the least recently written go first). */
const SESSIONS = 1024;

/** One stored node a chain can be extended from: its hash, how many items its list holds, and a digest of them. */
export interface ChainEnd {
  node: string;
  length: number;
  digest: string;
}

/**
 * What the writer remembers of the lists it stored last, per session: only node hashes and
 * digests, never the items, so memory stays small. A remembered node may have been deleted since
 * (retention, forgetting): storing then finds it gone and writes the whole list again.
 */
export class ListChains {
  private readonly sessions = new Map<string, ChainEnd[][]>();

  /** The chains of one session (created on first use). */
  of(key: string): ChainEnd[][] {
    let chains = this.sessions.get(key);
    if (chains) {
      this.sessions.delete(key);
    } else {
      chains = [];
      if (this.sessions.size >= SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    }
    this.sessions.set(key, chains);
    return chains;
  }

  clear(): void {
    this.sessions.clear();
  }
}

/**
 * Stores a list of parts (hashes with their JSON), reusing the longest remembered chain whose list
 * is a prefix of this one, and returns its node's hash. Counts one use of that node.
 */
export function storeList(hashes: readonly string[], jsons: readonly string[], sink: SegmentSink, chains: ChainEnd[][]): string {
  const joined = hashes.join('');
  const prefixDigest = (length: number) => digest('sha256', joined.slice(0, length * HASH_CHARS), 'base64url');
  let best: { chain: ChainEnd[]; index: number } | undefined;
  for (const chain of chains) {
    for (let index = chain.length - 1; index >= 0; index--) {
      const end = chain[index]!;
      if (end.length > hashes.length || (best && end.length <= best.chain[best.index]!.length)) continue;
      if (end.digest === prefixDigest(end.length)) {
        best = { chain, index };
        break;
      }
    }
  }
  if (best) {
    const base = best.chain[best.index]!;
    const stored = base.length === hashes.length ? reuse(base.node, sink) : extend(base.node, hashes.slice(base.length), jsons.slice(base.length), sink);
    if (stored !== undefined) {
      best.chain.splice(best.index + 1);
      if (stored !== base.node) best.chain.push({ node: stored, length: hashes.length, digest: prefixDigest(hashes.length) });
      if (best.chain.length > KEPT_ENDS) best.chain.splice(0, best.chain.length - KEPT_ENDS);
      remember(chains, best.chain);
      return stored;
    }
    chains.splice(chains.indexOf(best.chain), 1); // its nodes are gone
  }
  const node = putNode({ m: [...hashes] }, jsons, hashes, sink);
  remember(chains, [{ node, length: hashes.length, digest: prefixDigest(hashes.length) }]);
  return node;
}

/** The same list again (a retry, a resend): one more use of its node, if it is still stored. */
function reuse(node: string, sink: SegmentSink): string | undefined {
  return sink.reference(node) ? node : undefined;
}

/** A node adding `hashes` to the list of `prefix`; undefined when `prefix` is no longer stored. */
function extend(prefix: string, hashes: string[], jsons: string[], sink: SegmentSink): string | undefined {
  const node: ListNode = { p: prefix, m: hashes };
  const json = JSON.stringify(node);
  const hash = digest('sha256', json, 'base64url');
  if (sink.reference(hash)) return hash;
  if (!sink.reference(prefix)) return undefined;
  sink.put(hash, json);
  hashes.forEach((item, index) => sink.put(item, jsons[index]!));
  return hash;
}

/** Stores a node (or counts one more use); a new node counts one use of each of its items. */
function putNode(node: ListNode, jsons: readonly string[], hashes: readonly string[], sink: SegmentSink): string {
  const json = JSON.stringify(node);
  const hash = digest('sha256', json, 'base64url');
  if (sink.put(hash, json)) hashes.forEach((item, index) => sink.put(item, jsons[index]!));
  return hash;
}

function remember(chains: ChainEnd[][], chain: ChainEnd[]): void {
  const at = chains.indexOf(chain);
  if (at !== -1) chains.splice(at, 1);
  chains.unshift(chain);
  if (chains.length > CHAINS_PER_SESSION) chains.length = CHAINS_PER_SESSION;
}

/**
 * The item hashes of a stored list, first to last. A node that is missing ends the walk: the
 * items before it cannot be known, so the list starts with `missing(node)` in their place.
 */
export function listItems(node: string, source: SegmentSource): Array<{ hash: string } | { missing: string }> {
  const runs: Array<Array<{ hash: string } | { missing: string }>> = [];
  let next: string | undefined = node;
  while (next !== undefined) {
    const json = source.get(next);
    if (json === undefined) {
      runs.push([{ missing: next }]);
      break;
    }
    const parsed = JSON.parse(json) as ListNode;
    runs.push(parsed.m.map((hash) => ({ hash })));
    next = parsed.p;
  }
  return runs.reverse().flat();
}

/** What a node refers to: the node it extends and its items (each counted once per occurrence). */
export function nodeChildren(json: string): { prefix: string | undefined; items: string[] } {
  const parsed = JSON.parse(json) as ListNode;
  return { prefix: parsed.p, items: parsed.m };
}
