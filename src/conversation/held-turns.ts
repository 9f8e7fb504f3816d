import type { FinishedTurn, JsonBody } from './types.js';

/** What a turn kept without its bodies shows where the request body was. */
const BODY_NOT_KEPT: JsonBody = { text: '{"metaclaw":"the full body was not kept: MetaClaw\'s record backlog was over its limit"}' };

export interface HeldTurnsCounts {
  held: number;
  /** Of those, turns past the limits that wait on disk only (the turn journal), read back when written. */
  held_on_disk: number;
  /** Turns whose bodies were dropped (their summaries were kept). */
  bodies_dropped: number;
  /** Turns dropped whole, oldest first, once the count limit was reached. */
  turns_dropped: number;
}

/** A waiting turn past the memory limits whose entry in the turn journal stands for it. */
export interface OnDisk {
  onDisk: string;
}

export type HeldTurn = FinishedTurn | OnDisk;

export function isOnDisk(held: HeldTurn): held is OnDisk {
  return 'onDisk' in held;
}

/**
 * Turns waiting for the store to be writable again (a full disk, a lock held too long, the team
 * store out of reach). Bounded: past `maxTurns` turns or `maxBodyChars` of waiting bodies, a turn
 * that `onDisk` says is kept on disk waits as its id alone, in its place, and is read back when it
 * is written; any other turn is kept without its bodies past `maxBodyChars`, and past `maxTurns`
 * the oldest turn goes. Everything dropped is counted and shown in /status.
 */
export class HeldTurns<Held extends HeldTurn = FinishedTurn> {
  private turns: Held[] = [];
  private bodyChars = 0;
  private inMemory = 0;
  private bodiesDropped = 0;
  private turnsDropped = 0;

  constructor(
    private readonly maxTurns = 10_000,
    private readonly maxBodyChars = 32 * 1024 * 1024,
    /** Whether the turn can be read back from disk (the turn journal holds it), so memory can let it go. */
    private readonly onDisk: (turn: FinishedTurn) => boolean = () => false,
  ) {}

  get size(): number {
    return this.turns.length;
  }

  hold(turn: FinishedTurn): void {
    const chars = bodyChars(turn);
    const full = this.bodyChars + chars > this.maxBodyChars || this.inMemory >= this.maxTurns;
    if (full && this.onDisk(turn)) {
      // Only a HeldTurns<HeldTurn> is given `onDisk` (SpooledRecorder): the store's own never holds ids alone.
      this.turns.push({ onDisk: turn.id } as Held);
      return;
    }
    this.inMemory++;
    if (this.bodyChars + chars > this.maxBodyChars) {
      this.turns.push(withoutBodies(turn) as Held);
      this.bodiesDropped++;
    } else {
      this.turns.push(turn as Held);
      this.bodyChars += chars;
    }
    if (this.inMemory > this.maxTurns) {
      const oldest = this.turns.findIndex((held) => !isOnDisk(held));
      this.forget(this.turns.splice(oldest, 1));
      this.turnsDropped++;
    }
  }

  /** The oldest held turn, left in place (the store probe tries to write it). */
  first(): Held | undefined {
    return this.turns[0];
  }

  /** The oldest `count` held turns, left in place. */
  peek(count: number): Held[] {
    return this.turns.slice(0, count);
  }

  dropFirst(count = 1): void {
    this.forget(this.turns.splice(0, count));
  }

  takeAll(): Held[] {
    const turns = this.turns;
    this.turns = [];
    this.bodyChars = 0;
    this.inMemory = 0;
    return turns;
  }

  counts(): HeldTurnsCounts {
    return {
      held: this.turns.length,
      held_on_disk: this.turns.length - this.inMemory,
      bodies_dropped: this.bodiesDropped,
      turns_dropped: this.turnsDropped,
    };
  }

  /** A turn waiting on disk could not be read back: counted as dropped. */
  countTurnDropped(): void {
    this.turnsDropped++;
  }

  private forget(turns: readonly HeldTurn[]): void {
    for (const turn of turns) {
      if (isOnDisk(turn)) continue;
      this.bodyChars -= bodyChars(turn);
      this.inMemory--;
    }
  }

  countBodiesDropped(): void {
    this.bodiesDropped++;
  }
}

export function bodyChars(turn: FinishedTurn): number {
  return bodyLength(turn.payload.received) + (turn.payload.forwarded ? bodyLength(turn.payload.forwarded) : 0);
}

function bodyLength(body: JsonBody): number {
  // A body held as an object alone is rare (CLI and tests); its size is guessed from nothing but its presence.
  return body.text?.length ?? 1024;
}

/** The turn's summary (request text, answer, status, timing) without its full bodies. */
export function withoutBodies(turn: FinishedTurn): FinishedTurn {
  return { ...turn, payload: { ...turn.payload, received: BODY_NOT_KEPT, forwarded: null } };
}
