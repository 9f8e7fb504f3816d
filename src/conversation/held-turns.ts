import type { FinishedTurn, JsonBody } from './types.js';

/** What a turn kept without its bodies shows where the request body was. */
const BODY_NOT_KEPT: JsonBody = { text: '{"metaclaw":"the full body was not kept: MetaClaw\'s record backlog was over its limit"}' };

export interface HeldTurnsCounts {
  held: number;
  /** Turns whose bodies were dropped (their summaries were kept). */
  bodies_dropped: number;
  /** Turns dropped whole, oldest first, once the count limit was reached. */
  turns_dropped: number;
}

/**
 * Turns waiting for the store to be writable again (a full disk, a lock held too long). Bounded:
 * past `maxBodyChars` of waiting bodies a turn is kept without its bodies, past `maxTurns` the
 * oldest turn goes. Everything dropped is counted and shown in /status.
 */
export class HeldTurns {
  private turns: FinishedTurn[] = [];
  private bodyChars = 0;
  private bodiesDropped = 0;
  private turnsDropped = 0;

  constructor(
    private readonly maxTurns = 10_000,
    private readonly maxBodyChars = 32 * 1024 * 1024,
  ) {}

  get size(): number {
    return this.turns.length;
  }

  hold(turn: FinishedTurn): void {
    const chars = bodyChars(turn);
    if (this.bodyChars + chars > this.maxBodyChars) {
      this.turns.push(withoutBodies(turn));
      this.bodiesDropped++;
    } else {
      this.turns.push(turn);
      this.bodyChars += chars;
    }
    if (this.turns.length > this.maxTurns) {
      this.bodyChars -= bodyChars(this.turns.shift()!);
      this.turnsDropped++;
    }
  }

  /** The oldest held turn, left in place (the store probe tries to write it). */
  first(): FinishedTurn | undefined {
    return this.turns[0];
  }

  /** The oldest `count` held turns, left in place. */
  peek(count: number): FinishedTurn[] {
    return this.turns.slice(0, count);
  }

  dropFirst(count = 1): void {
    for (const turn of this.turns.splice(0, count)) this.bodyChars -= bodyChars(turn);
  }

  takeAll(): FinishedTurn[] {
    const turns = this.turns;
    this.turns = [];
    this.bodyChars = 0;
    return turns;
  }

  counts(): HeldTurnsCounts {
    return { held: this.turns.length, bodies_dropped: this.bodiesDropped, turns_dropped: this.turnsDropped };
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
