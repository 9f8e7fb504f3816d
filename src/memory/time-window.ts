/** A span of time a query asks about ("last week", "昨天", "on 2026-11-02"), as [start, end) in ms. */
export interface TimeWindow {
  start: number;
  end: number;
  label: string;
}

const DAY = 86_400_000;

/**
 * Finds a time expression in a query, in English or Chinese, relative to `now` (local time).
 * Returns undefined when the query names no time.
 */
export function timeWindowOf(query: string, now = new Date()): TimeWindow | undefined {
  const today = startOfDay(now);
  const text = query.toLowerCase();
  const iso = /\b(\d{4})-(\d{2})-(\d{2})\b/.exec(text);
  if (iso) {
    const start = new Date(Number(iso[1]), Number(iso[2]) - 1, Number(iso[3])).getTime();
    return { start, end: start + DAY, label: iso[0] };
  }
  const rules: Array<[RegExp, () => TimeWindow]> = [
    [/\b(today|this morning|earlier today)\b|今天|今日/, () => ({ start: today, end: today + DAY, label: 'today' })],
    [/\byesterday\b|昨天|昨日/, () => ({ start: today - DAY, end: today, label: 'yesterday' })],
    [/\b(the day before yesterday)\b|前天/, () => ({ start: today - 2 * DAY, end: today - DAY, label: 'the day before yesterday' })],
    [/\blast week\b|上周|上星期|上個星期/, () => ({ start: startOfWeek(today) - 7 * DAY, end: startOfWeek(today), label: 'last week' })],
    [/\bthis week\b|这周|本周|這週/, () => ({ start: startOfWeek(today), end: today + DAY, label: 'this week' })],
    [/\blast month\b|上个月|上個月/, () => monthWindow(now, -1, 'last month')],
    [/\bthis month\b|这个月|本月/, () => monthWindow(now, 0, 'this month')],
    [/\b(a few|couple of|two|2|three|3) days ago\b|前几天/, () => ({ start: today - 4 * DAY, end: today - DAY, label: 'a few days ago' })],
    [/\brecently\b|最近/, () => ({ start: today - 7 * DAY, end: today + DAY, label: 'recently' })],
  ];
  for (const [pattern, window] of rules) if (pattern.test(text)) return window();
  return undefined;
}

function startOfDay(date: Date): number {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
}

/** Weeks start on Monday. */
function startOfWeek(dayStart: number): number {
  const weekday = (new Date(dayStart).getDay() + 6) % 7;
  return dayStart - weekday * DAY;
}

function monthWindow(now: Date, offset: number, label: string): TimeWindow {
  const start = new Date(now.getFullYear(), now.getMonth() + offset, 1).getTime();
  const end = new Date(now.getFullYear(), now.getMonth() + offset + 1, 1).getTime();
  return { start, end, label };
}
