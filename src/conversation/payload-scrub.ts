import { listItems, ListChains } from './list-chains.js';
import { decodeDocument, documentReferences, encodeDocument, JsonTexts } from './payload-codec.js';
import type { PartReferences, SegmentSink, SegmentSource } from './segment-table.js';

/** What the scrubber needs of a segment table: SQLite's SegmentTable, or the team store's staged parts (store/postgres/forget-scope.ts). */
export interface ScrubbedSegments extends SegmentSink, SegmentSource {
  release(references: PartReferences): void;
  delete(hash: string): void;
}

/**
 * Rewrites stored bodies with a text removed from every string in them (forgetting a memory). An
 * agent resends its whole history, so every later body of the session holds the text too, often
 * through parts they share. A rewritten body is stored like a new one (its sessions' lists chained
 * again) and the old one is released, so parts stay counted right. Parts that held the text are
 * deleted at the end even if a body elsewhere still uses them: the text must leave the file.
 */
export class PayloadScrubber {
  private readonly tainted = new Set<string>();
  /** Parts as they were before the rewrite (a body's list is read again for every later turn). */
  private readonly read = new Map<string, string | undefined>();
  private readonly holding = new Map<string, boolean>();
  private readonly chains = new ListChains();
  private readonly source: SegmentSource = {
    get: (hash) => {
      if (!this.read.has(hash)) this.read.set(hash, this.segments.get(hash));
      return this.read.get(hash);
    },
  };

  constructor(
    private readonly segments: ScrubbedSegments,
    private readonly scrub: (text: string) => string,
    private readonly holds: (text: string) => boolean,
  ) {}

  /** A turn's bodies rewritten, or undefined when neither holds the text. Call for a session's turns in order. */
  rewrite(sessionId: string, received: string | null, forwarded: string | null): { received: string | null; forwarded: string | null } | undefined {
    const holding = [...this.contentParts(received), ...this.contentParts(forwarded)].filter((hash) => this.partHolds(hash));
    if (holding.length === 0 && !(received !== null && this.holds(received)) && !(forwarded !== null && this.holds(forwarded))) return undefined;
    for (const hash of holding) this.tainted.add(hash);
    const receivedStored = received === null ? null : decodeDocument(received, this.source);
    const receivedBody = this.clean(receivedStored);
    const forwardedBody = forwarded === null ? null : this.clean(decodeDocument(forwarded, this.source, receivedStored));
    const options = { sink: this.segments, chains: this.chains.of(sessionId), json: new JsonTexts() };
    const rewritten = {
      received: receivedBody === null ? null : encodeDocument({ text: JSON.stringify(receivedBody), value: receivedBody }, options),
      forwarded:
        forwardedBody === null ? null : encodeDocument({ text: JSON.stringify(forwardedBody), value: forwardedBody }, { ...options, base: receivedBody }),
    };
    this.segments.release(documentReferences(received));
    this.segments.release(documentReferences(forwarded));
    return rewritten;
  }

  /** Deletes the parts that held the text, once every body of the sessions has been rewritten. */
  finish(): void {
    for (const hash of this.tainted) this.segments.delete(hash);
  }

  /** The parts holding values a stored body uses, through its lists too (list nodes hold only hashes). */
  private contentParts(stored: string | null): string[] {
    const { parts, lists } = documentReferences(stored);
    for (const list of lists) {
      for (const item of listItems(list, this.source)) if ('hash' in item) parts.push(item.hash);
    }
    return parts;
  }

  private partHolds(hash: string): boolean {
    if (this.tainted.has(hash)) return true;
    let holds = this.holding.get(hash);
    if (holds === undefined) {
      const json = this.source.get(hash);
      holds = json !== undefined && this.holds(json);
      this.holding.set(hash, holds);
    }
    return holds;
  }

  private clean(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) return value.map((item) => this.clean(item));
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.clean(item)]));
    return value;
  }
}
