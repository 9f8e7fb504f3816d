import type { Interval } from './types.js';

const DAY_MS = 86_400_000;

/**
 * The nightly window, in local time (the machine's time zone, daylight saving included). Start
 * after end wraps midnight (23:00–07:00); start equal to end is an empty window.
 */
export class SleepHours {
  private readonly start: [number, number];
  private readonly end: [number, number];

  constructor(
    readonly startText: string,
    readonly endText: string,
  ) {
    this.start = parseTime(startText);
    this.end = parseTime(endText);
  }

  get label(): string {
    return `${this.startText}–${this.endText}`;
  }

  /** The sleep window containing `t`, or null when `t` is outside one. */
  intervalAt(t: number): Interval | null {
    // The window containing t started today or yesterday (local days).
    for (const dayOffset of [0, -1]) {
      const window = this.windowStartingOn(t, dayOffset);
      if (window && window.start <= t && t < window.end) return window;
    }
    return null;
  }

  /** The next sleep window that starts after `t` (at most two days ahead). */
  nextAfter(t: number): Interval | null {
    for (const dayOffset of [0, 1, 2]) {
      const window = this.windowStartingOn(t, dayOffset);
      if (window && window.start > t) return window;
    }
    return null;
  }

  /** The window that starts on the local day `dayOffset` days from `t`'s. */
  private windowStartingOn(t: number, dayOffset: number): Interval | null {
    const day = new Date(t);
    const start = new Date(day.getFullYear(), day.getMonth(), day.getDate() + dayOffset, this.start[0], this.start[1]).getTime();
    const wraps = this.end[0] * 60 + this.end[1] < this.start[0] * 60 + this.start[1];
    const end = new Date(day.getFullYear(), day.getMonth(), day.getDate() + dayOffset + (wraps ? 1 : 0), this.end[0], this.end[1]).getTime();
    if (end <= start || end - start > DAY_MS + 3_600_000) return null;
    return { start, end };
  }
}

function parseTime(text: string): [number, number] {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text);
  if (!match) throw new Error(`expected a time of day as HH:MM, got ${JSON.stringify(text)}`);
  return [Number(match[1]), Number(match[2])];
}
