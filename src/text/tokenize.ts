import { stemmer } from 'stemmer';
import { chineseWords } from './chinese-words.js';

/**
 * Turns text into search terms for every language the proxy meets: ICU word segmentation
 * (Intl.Segmenter, which splits Chinese and Japanese with its dictionary; Chinese pieces are read
 * again as the bundled glossary's words, chinese-words.ts), lower case, stop words
 * removed, English words stemmed. Skills and memory index and query with this same function, so a
 * query and a document always agree on what a term is.
 */
const segmenter = new Intl.Segmenter('und', { granularity: 'word' });

/**
 * Which terms the index was built with: the stop list (the English glosses indexed beside a Chinese
 * or Japanese unit pass through it) and how Chinese is cut into words; a change re-indexes stored
 * units with their terms made again (memory/keyword-index.ts). "quite" is a stop word as "very" is:
 * kept, it stemmed to "quit", and every 很 (very, quite) met a question about quitting. Terms 3:
 * Chinese pieces joined into the glossary's words (chinese-words.ts).
 */
export const TOKENIZER_VERSION = 'terms-3';

const ENGLISH_STOP_WORDS = new Set(
  `a about above after again against all am an and any are aren't as at be because been before being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also just quite can like want need please get got make use using used help thing things way really would could should will shall may might must one two yes ok okay hi hello hey thanks thank`.split(
    /\s+/,
  ),
);

/**
 * Function words of Chinese and Japanese that segmenters return as words, and the question words
 * English drops too (who, where, which: "哪里", "谁", "哪个"): a question's "从哪里" otherwise matched
 * every turn that asks where to eat. "很" is "very" ("很喜欢" is read as 很 + 喜欢, chinese-words.ts), and
 * "怎么样", "有没有" are the question forms the glossary joins from pieces that were stop words.
 */
const CJK_STOP_WORDS = new Set(
  '的 了 是 在 我 你 他 她 它 们 我们 你们 这 那 这个 那个 怎么 怎样 如何 什么 哪里 哪儿 哪 谁 哪个 哪些 吗 呢 吧 啊 和 与 或 就 都 也 还 要 会 能 可以 一下 一个 有 没有 不 请 帮 帮我 给 把 被 让 来 去 上 下 中 里 之 为 为什么 所以 因为 但是 如果 多少 几 几个 时候 什么时候 哪年 哪天 几月 几号 多久 怎么样 有没有 很 の を に は が で と も へ や か な た て だ です ます する した して ください これ それ あれ この その どう 何 ね よ'.split(
    ' ',
  ),
);
/**
 * The segmenter often joins two function characters into one word ("我的", "我是", "的是", "谁在",
 * "都在"): a Chinese word made of stop characters alone is a stop word too, or a question's "我是"
 * matches every turn where the user says "I am" (Chinese dev histories, recall@10: dev-zh 77 → 83 %,
 * dev-long's Chinese questions 85 → 95 %). A negation is no function character here: "不会", "是不是"
 * say what a request wants not to happen (skill recall of the parallel Chinese requests drops without them).
 */
const CJK_STOP_CHARACTERS = new Set([...CJK_STOP_WORDS].filter((word) => word.length === 1 && word !== '不' && /[\u3400-\u9fff]/.test(word)));
const HAN_WORD = /^[\u3400-\u9fff]+$/;
/** Text with a Han character; with kana besides, it is Japanese (which stays as ICU cuts it). */
const HAN = /[\u3400-\u9fff]/;
const KANA = /[\u3040-\u30ff]/;

function isCjkStopWord(word: string): boolean {
  return CJK_STOP_WORDS.has(word) || KANA_FRAGMENT.test(word) || (HAN_WORD.test(word) && [...word].every((character) => CJK_STOP_CHARACTERS.has(character)));
}

/**
 * Japanese particles, verb endings and the pieces the segmenter cuts inflected verbs into (し, ま,
 * す, れ, ば, ない, して): written in hiragana alone and one or two long, they carry no topic.
 */
const KANA_FRAGMENT = /^[\u3040-\u309f\u30fc]{1,2}$/;

const HAS_LATIN = /[a-z]/;
const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/;

/** One word segment: its text and whether it is a word (not spaces or punctuation). */
export type WordSegment = Pick<Intl.SegmentData, 'segment' | 'isWordLike'>;

/**
 * Longest text segmented in one go. V8's segment iterator gets slower the further it is into a
 * string (each step costs in proportion to its position): 16,000 words took 0.8 s, a 900 KB user
 * message minutes, blocking every request meanwhile. Longer text is segmented piece by piece.
 */
const SEGMENT_PIECE = 2048;
const SPACE = /\s/;
/** What a piece may not start with: marks and format characters attach to the character before them. */
const ATTACHED = /[\s\p{M}\p{Cf}]/u;

/**
 * The segmenter's pieces of `text` (what `tokenize` reads), for callers that need the pieces
 * themselves; in Chinese text (Han characters and no kana: kana makes it Japanese, which stays as
 * ICU cuts it), the runs of Han pieces as the glossary's words (chinese-words.ts).
 */
export function wordSegments(text: string): Iterable<WordSegment> {
  const segments = text.length <= SEGMENT_PIECE ? segmenter.segment(text) : segmentsInPieces(text);
  return HAN.test(text) && !KANA.test(text) ? chineseSegments(segments) : segments;
}

function chineseSegments(segments: Iterable<WordSegment>): WordSegment[] {
  const out: WordSegment[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length === 0) return;
    for (const word of run.length === 1 && run[0]!.length < 3 ? run : chineseWords(run)) out.push({ segment: word, isWordLike: true });
    run = [];
  };
  for (const { segment, isWordLike } of segments) {
    if (isWordLike && HAN_WORD.test(segment)) {
      run.push(segment);
      continue;
    }
    flush();
    out.push({ segment, isWordLike });
  }
  flush();
  return out;
}

function* segmentsInPieces(text: string): Generator<WordSegment> {
  for (let start = 0; start < text.length;) {
    const end = pieceEnd(text, start);
    yield* segmenter.segment(text.slice(start, end));
    start = end;
  }
}

/**
 * Where the piece from `start` ends: after a space, where no word can continue, so the words are
 * those of the whole text. Text without spaces (Chinese, Japanese) is cut at the length, only
 * never inside a surrogate pair: one word at each cut may then split differently.
 */
function pieceEnd(text: string, start: number): number {
  const end = start + SEGMENT_PIECE;
  if (end >= text.length) return text.length;
  for (let cut = end; cut > start + SEGMENT_PIECE / 2; cut--) {
    if (SPACE.test(text[cut - 1]!) && !ATTACHED.test(text[cut]!)) return cut;
  }
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end + 1 : end;
}

/** ICU keeps a file or host name ("README.md", "budget.xlsx", "node.js") as one word; its parts are what people type. */
const DOTTED_NAME = /\p{L}\.\p{L}/u;

export function tokenize(text: string): string[] {
  const terms: string[] = [];
  for (const part of wordSegments(text)) {
    if (!part.isWordLike) continue;
    const segment = part.segment.toLowerCase();
    for (const word of DOTTED_NAME.test(segment) ? segment.split('.') : [segment]) {
      const term = termOf(word);
      if (term !== undefined) terms.push(term);
    }
  }
  return terms;
}

/** The search term of one word as the segmenter cut it (undefined for a stop word): what `tokenize` makes of it. */
export function termOf(segment: string): string | undefined {
  const word = segment.toLowerCase();
  if (CJK.test(word)) return isCjkStopWord(word) ? undefined : word;
  if (ENGLISH_STOP_WORDS.has(word)) return undefined;
  if (word.length < 2 && !/\d/.test(word)) return undefined;
  return HAS_LATIN.test(word) ? stemmer(word.replace(/'s$/, '')) : word;
}

/**
 * Verbs the stop list drops for their other uses ("like this", "I'd like") while their inflected forms
 * stay terms ("likes", "liked"): a dictionary gloss that says "to like" means the verb of taste, and
 * keeps it as that term. Not "want", "need", "help": their Chinese and Japanese words (要, 需要, 帮助)
 * are a request's filler as the English ones are (kept, skills dev2 zh 0.96 → 0.92).
 */
const FILLER_VERBS = new Set(['like']);

/**
 * The search term of a word of a dictionary gloss (data/glossary): what `termOf` makes of it, and
 * the stem of a verb of taste (喜欢 "to like" is searched as "like", which "likes" and "liked" give).
 */
export function glossTermOf(word: string): string | undefined {
  const lower = word.toLowerCase();
  return FILLER_VERBS.has(lower) ? stemmer(lower) : termOf(lower);
}

const recent = new Map<string, string[]>();

/**
 * Unique terms, in first-seen order. Agents resend the same messages on every step of a tool loop,
 * so recent results are cached.
 */
export function uniqueTerms(text: string): readonly string[] {
  const cached = recent.get(text);
  if (cached) return cached;
  const terms = [...new Set(tokenize(text))];
  if (recent.size >= 512) recent.delete(recent.keys().next().value as string);
  recent.set(text, terms);
  return terms;
}
