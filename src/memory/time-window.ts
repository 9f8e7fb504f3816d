/** A span of time a query asks about ("last week", "昨天", "on 2026-11-02", "last spring"), as [start, end) in ms. */
export interface TimeWindow {
  start: number;
  end: number;
  label: string;
  /** The words of the query that named it: they say when, not what, so they are no search terms. */
  phrase: string;
}

const DAY = 86_400_000;

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_WORDS = `${MONTHS.join('|')}|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec`;
const CHINESE_NUMBERS: Record<string, number> = { 一: 1, 二: 2, 两: 2, 三: 3, 四: 4, 五: 5, 六: 6, 七: 7, 八: 8, 九: 9, 十: 10, 十一: 11, 十二: 12 };
const CHINESE_MONTH = '(十一|十二|十|[一二三四五六七八九]|1[0-2]|[1-9])';

/** Seasons as months of the northern hemisphere (0-based first month; winter starts in the December before). */
const SEASONS: Record<string, number> = { spring: 2, summer: 5, autumn: 8, fall: 8, winter: 11, 春: 2, 夏: 5, 秋: 8, 冬: 11 };

type Rule = [RegExp, (match: RegExpExecArray) => Omit<TimeWindow, 'phrase'> | undefined];

/**
 * Finds a time expression in a query, in English or Chinese, relative to `now` (local time).
 * Returns undefined when the query names no time.
 */
export function timeWindowOf(query: string, now = new Date()): TimeWindow | undefined {
  const today = startOfDay(now);
  const text = query.toLowerCase();
  const rules: Rule[] = [
    [
      /\b(\d{4})-(\d{2})-(\d{2})\b/,
      (match) => {
        const start = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3])).getTime();
        return { start, end: start + DAY, label: match[0] };
      },
    ],
    [/\b(today|this morning|earlier today)\b|今天|今日/, () => ({ start: today, end: today + DAY, label: 'today' })],
    [/\b(the day before yesterday)\b|前天/, () => ({ start: today - 2 * DAY, end: today - DAY, label: 'the day before yesterday' })],
    [/\byesterday\b|昨天|昨日/, () => ({ start: today - DAY, end: today, label: 'yesterday' })],
    [/\blast weekend\b|上周末|上个周末/, () => ({ start: startOfWeek(today) - 2 * DAY, end: startOfWeek(today), label: 'last weekend' })],
    [/\blast week\b|上周|上星期|上個星期/, () => ({ start: startOfWeek(today) - 7 * DAY, end: startOfWeek(today), label: 'last week' })],
    [/\bthis week\b|这周|本周|這週/, () => ({ start: startOfWeek(today), end: today + DAY, label: 'this week' })],
    [/\blast month\b|上个月|上個月/, () => monthWindow(now, -1, 'last month')],
    [/\bthis month\b|这个月|本月/, () => monthWindow(now, 0, 'this month')],
    [/\b(last|this|past|in the|in)\s+(spring|summer|autumn|fall|winter)\b/, (match) => seasonWindow(now, match[2]!, match[1] === 'this' ? 0 : -1)],
    [/(去年|今年)?(春|夏|秋|冬)(天|季)/, (match) => seasonWindow(now, match[2]!, match[1] === '去年' ? -2 : match[1] === '今年' ? 0 : -1)],
    [new RegExp(`\\b(?:in|last|since|during|back in|early|late)\\s+(${MONTH_WORDS})\\b`), (match) => namedMonthWindow(now, monthIndex(match[1]!))],
    [new RegExp(`(去年|今年)?${CHINESE_MONTH}月(份)?`), (match) => chineseMonthWindow(now, match[1], match[2]!)],
    [/\b(a|one|two|three|four|five|six|\d+) (week|month)s? ago\b/, (match) => agoWindow(today, match[1]!, match[2] as 'week' | 'month')],
    [
      /\blast year\b|去年/,
      () => ({ start: new Date(now.getFullYear() - 1, 0, 1).getTime(), end: new Date(now.getFullYear(), 0, 1).getTime(), label: 'last year' }),
    ],
    [/\b(earlier )?this year\b|今年/, () => ({ start: new Date(now.getFullYear(), 0, 1).getTime(), end: today + DAY, label: 'this year' })],
    [/\b(a few|couple of|two|2|three|3) days ago\b|前几天/, () => ({ start: today - 4 * DAY, end: today - DAY, label: 'a few days ago' })],
    [/\brecently\b|最近/, () => ({ start: today - 7 * DAY, end: today + DAY, label: 'recently' })],
  ];
  for (const [pattern, window] of rules) {
    const match = pattern.exec(text);
    const found = match ? window(match) : undefined;
    if (match && found) return { ...found, phrase: match[0] };
  }
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

function monthWindow(now: Date, offset: number, label: string): Omit<TimeWindow, 'phrase'> {
  const start = new Date(now.getFullYear(), now.getMonth() + offset, 1).getTime();
  const end = new Date(now.getFullYear(), now.getMonth() + offset + 1, 1).getTime();
  return { start, end, label };
}

function monthIndex(word: string): number {
  return MONTHS.findIndex((month) => month.startsWith(word.slice(0, 3)));
}

/** "in March": the latest March that has begun (this year's, or last year's before March). */
function namedMonthWindow(now: Date, month: number): Omit<TimeWindow, 'phrase'> | undefined {
  if (month < 0) return undefined;
  const year = month <= now.getMonth() ? now.getFullYear() : now.getFullYear() - 1;
  return { start: new Date(year, month, 1).getTime(), end: new Date(year, month + 1, 1).getTime(), label: `${MONTHS[month]} ${year}` };
}

function chineseMonthWindow(now: Date, year: string | undefined, number: string): Omit<TimeWindow, 'phrase'> | undefined {
  const month = (CHINESE_NUMBERS[number] ?? Number(number)) - 1;
  if (!(month >= 0 && month < 12)) return undefined;
  if (year === undefined) return namedMonthWindow(now, month);
  const at = now.getFullYear() - (year === '去年' ? 1 : 0);
  return { start: new Date(at, month, 1).getTime(), end: new Date(at, month + 1, 1).getTime(), label: `${MONTHS[month]} ${at}` };
}

/**
 * A season: `back` 0 is the one this year (the current one while it lasts), -1 the latest one that
 * has ended ("last spring" in September is this year's spring), -2 the one of last year ("去年春天").
 */
function seasonWindow(now: Date, name: string, back: 0 | -1 | -2): Omit<TimeWindow, 'phrase'> | undefined {
  const first = SEASONS[name];
  if (first === undefined) return undefined;
  // The year in which this year's season starts (winter starts the December before).
  const startYear = (year: number) => (first === 11 ? year - 1 : year);
  const windowOf = (year: number) => ({
    start: new Date(startYear(year), first, 1).getTime(),
    end: new Date(startYear(year), first + 3, 1).getTime(),
    label: `${name} ${year}`,
  });
  const year = now.getFullYear();
  if (back === 0) return windowOf(year);
  if (back === -2) return windowOf(year - 1);
  const current = windowOf(year);
  const nextWinter = first === 11 ? windowOf(year + 1) : undefined;
  if (nextWinter && nextWinter.end <= now.getTime()) return nextWinter;
  return current.end <= now.getTime() ? current : windowOf(year - 1);
}

function agoWindow(today: number, count: string, unit: 'week' | 'month'): Omit<TimeWindow, 'phrase'> {
  const words: Record<string, number> = { a: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6 };
  const amount = words[count] ?? Number(count);
  const span = unit === 'week' ? 7 * DAY : 30 * DAY;
  const centre = today - amount * span;
  // "two months ago" is rarely exact: half a unit either side.
  return { start: centre - span / 2, end: centre + span / 2 + DAY, label: `${amount} ${unit}s ago` };
}
