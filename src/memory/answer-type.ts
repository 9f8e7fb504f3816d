import { uniqueTerms } from '../text/index.js';

/**
 * Answer-type cues (classic question answering): the form of a question says what kind of text
 * answers it. "How much" is answered by a turn that holds a number, "who" and "where" by one that
 * holds a name, "what does he do for a living" by one that names an occupation ("He's a firefighter",
 * "他是物理老师"). Recall uses this only to order candidates some word of the question (or of the turn
 * next to them) already found, never to find them: many turns hold a number or a name.
 *
 * "When" → a date or a time word was tried and left out: the turn that says what happened often
 * holds no date (its session's day dates it: "Moving day was chaos"), and turns that name a day
 * without answering then rose above it (test/fixtures/dev-recall/README.md).
 *
 * A question that asks for an inference ("Would my mom enjoy a sushi dinner?", "What might John's
 * political leaning be?", "…当礼物合适吗？") is answered by what the person likes, dislikes, does
 * habitually, plans or cannot do ("she eats nothing raw", "她最爱吃馒头", "不能打球了"), not by the
 * turn that merely mentions the same thing.
 */

export type AnswerType = 'quantity' | 'occupation' | 'name' | 'disposition';

/**
 * Checked in order: "how many" asks a quantity even in a question that also says "where". "Which"
 * before a noun asks for one thing of a kind, most often named: "which schools", "which cars"
 * (models), "which structures" (a named viaduct), "which Nobel laureate", "which lender" (a bank).
 * It first counted for a dozen place and business nouns only (singular): dev-xl recall@10 70.7 →
 * 71.6 with every "which", @5 63.3 → 62.3 ("which tree" asks for a kind, cork oak, not a name).
 * After a comma "which" opens a relative clause ("…, which means …"), as long requests in prose use
 * it: no question for a name (no dev question changes).
 * A job comes after a name: "Which city is my brother in, and what line of work?" is answered by
 * "我哥在深圳做无人机", which names the place but no occupation. Only the asking forms count ("what's
 * his job", "for a living", "做什么工作"), not any "job": "What did I do to my knee on the Remuera
 * job?" asks an event. Dev recall@10: dev-xl 76.7 → 77.6 (a firefighter, 20th → 8th), every other
 * set the same.
 * An inference comes last: "How much more would the repair have cost…" asks a quantity. Its "会…吗"
 * ("will she…?") leaves out the words 会 is part of ("会议", "学会", "机会"): "明天的会议取消了吗？" asks a fact.
 */
const ASKS: ReadonlyArray<readonly [AnswerType, RegExp]> = [
  [
    'quantity',
    /\b(how (much|many|far|long|heavy|old|big|tall|often|fast)|what (price|weight|dose|distance|score|mark|grade)|by how much)\b|多少|几|多久|多重|多远|多大|多高|多长/i,
  ],
  [
    'name',
    /\b(who|whom|whose|where|(?<!,\s?)which (?!(?:of|one|ones|is|was|are|were|do|does|did|has|have|had|will|would|can|could|should|i|you|we|they|he|she|it)\b)\w+)\b|what(?:'s| is| was)? (?:the |my |our |his |her |their )?name\b|谁|哪里|在哪|哪儿|去哪|叫什么|哪个城市|哪家/i,
  ],
  [
    'occupation',
    /\bwhat(?:'s| is| was)? (?:[\w'’]+ ){0,3}(?:job|occupation|profession|line of work)\b|\b(?:for a living|do(?:es)? for work|work(?:s|ed)? as)\b|\bwhat does (?:[\w'’]+\s){1,5}do\s*\?|做什么工作|做什么的|干什么的|什么工作|职业|干哪行|仕事/i,
  ],
  [
    'disposition',
    /\b(would|might|likely|unlikely|probably|enjoy|prefer|suit(able)?|interested in|good (idea|gift|fit)|kind of person|more of an?)\b|合适|适合|会不会|(?<![学机开体社聚约大晚宴理误])会(?![议计员场长所话谈面见合])[^？?。]{0,12}吗|好不好|喜不喜欢|愿意|可能/i,
  ],
];

const NUMBER_WORDS =
  'one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|half|dozen|twice|once';
/**
 * A number: digits, an English number word, a run of Chinese numerals ("四万二") or one before a
 * measure ("三个星期", "两次"). A lone "一" is not one: it is in too many ordinary words.
 */
const HOLDS_QUANTITY = new RegExp(
  `\\d|\\b(${NUMBER_WORDS})\\b|[零一二两三四五六七八九十百千万亿半几]{2,}|[一二两三四五六七八九十百千万半几](个|次|岁|块|元|欧|镑|英镑|美元|公斤|斤|克|毫克|公里|米|分钟|小时|天|周|星期|月|年|倍|点|层|间|套|辆|只|位|成)`,
  'i',
);
/**
 * A name: a capitalised word that does not start a sentence (English; "I" and its contractions do
 * not count). Chinese writes names without capitals, so a text with Chinese in it is given the
 * benefit of the doubt: without it, "我弟弟搬去多伦多了" would lose to any English turn with a name in it.
 */
const HOLDS_NAME = /[^.!?。！？\s]\s+(?!I\b|I'|I’)[A-ZÀ-ÖØ-Þ][\p{L}'’-]+|\p{Script=Han}/u;

/**
 * A like or dislike, a habit, a plan or wish, or a limit (an allergy, an injury, what one cannot
 * do). Limits count because an inference about whether someone should or would do a thing rests on
 * them as much as on tastes: with likes and plans alone, "我现在适合重新开始打羽毛球吗？" lost its
 * evidence "…韧带拉伤…这段时间不能打球了" to turns about playing (dev-zh, 9th → 12th).
 */
const HOLDS_DISPOSITION =
  /\b(lov(e|es|ed|ing)|like[sd]|enjoy(s|ed|ing)?|hat(e|es|ed)|favou?rite|prefer(s|red)?|can['’]t|cannot|always|never|usually|often|habit|passion(ate)?|dream|fan of|keen on|fond of|allergic|allergy|afraid|scared|injur(y|ed)|plan(s|ning)? to|wants? to|hope to)\b|喜欢|爱|讨厌|烦|不吃|不喝|不能|怕|伤|打算|梦想|一直|从不|经常|习惯|过敏/i;

/** Words that name a trade or profession, in English (plurals count: "nurses") and in Chinese and Japanese. */
const OCCUPATIONS = `
  accountant actor actress analyst architect artist baker banker barber barista bartender builder
  butcher carer caretaker carpenter cashier chef chemist cleaner clerk coach consultant contractor
  courier curator dancer dentist designer developer diplomat director doctor driver economist editor
  electrician engineer farmer firefighter fisherman founder freelancer gardener geologist hairdresser
  illustrator inspector instructor interpreter journalist landscaper lawyer lecturer librarian
  lifeguard locksmith machinist manager mechanic midwife miner musician nanny nurse officer optician
  painter paramedic pharmacist photographer physician physicist physiotherapist pilot plumber poet
  policeman policewoman politician postman producer professor programmer psychologist ranger
  receptionist reporter researcher roofer sailor salesman saleswoman scientist secretary singer
  soldier surgeon surveyor tailor teacher technician therapist translator tutor vet veterinarian
  waiter waitress welder worker writer
`
  .split(/\s+/)
  .filter(Boolean);
const OCCUPATIONS_CJK = `
  老师 教师 教授 医生 大夫 护士 律师 工程师 设计师 程序员 会计 厨师 司机 警察 消防员 木匠 木工 电工 记者
  编辑 销售 经理 店主 公务员 科学家 研究员 作家 画家 演员 歌手 导演 摄影师 兽医 药剂师 建筑师 农民 飞行员
  保安 快递员 理发师 翻译 教练 工人 医師 教師 弁護士 看護師 エンジニア デザイナー 会社員
`
  .split(/\s+/)
  .filter(Boolean);
/** One pattern for both (a 2,000-character turn without one is read in about 20 µs; only questions about a job pay it). */
const HOLDS_OCCUPATION = new RegExp(`\\b(?:${OCCUPATIONS.join('|')})s?\\b|${OCCUPATIONS_CJK.join('|')}`, 'i');

const HOLDS: Record<AnswerType, RegExp> = { quantity: HOLDS_QUANTITY, occupation: HOLDS_OCCUPATION, name: HOLDS_NAME, disposition: HOLDS_DISPOSITION };

/** The kind of text that answers `query`, when its form says so. */
export function expectedAnswer(query: string): AnswerType | undefined {
  for (const [type, pattern] of ASKS) if (pattern.test(query)) return type;
  return undefined;
}

/**
 * How much of a unit is read for the cue. Recall runs it for every candidate of a question: a raw
 * turn may hold 8,000 characters, and 160 such turns without a number cost several milliseconds.
 * A turn that answers "how much" or "who" usually says so early.
 */
const READ_CHARS = 2_000;

/** Whether `content` holds text of the kind `type` asks for (in its first READ_CHARS characters). */
export function holdsAnswer(type: AnswerType, content: string): boolean {
  const head = content.length > READ_CHARS ? content.slice(0, READ_CHARS) : content;
  return HOLDS[type].test(head);
}

/** Units of time a question may count its answer in. */
const TIME_UNITS = String.raw`days?|weeks?|months?|years?|hours?|minutes?|nights?`;
/** Words that make "how many months …" the difference between two times ("passed between", "ahead of", "after"). */
const TIME_DIFFERENCE = String.raw`passed|elapsed|gone by|went by|between|after|before|since|ago|ahead|behind|later|earlier|apart`;
/**
 * The words that only say in which unit a question wants its answer: the unit of a difference between
 * two times ("How many months passed between the engagement and the wedding?", "How many hours ahead of
 * me are my parents?", "How long after … did …?"), the part of the calendar a "when" asks for ("In
 * which month…", "what year", "几月", "星期几"), and the "old" of an age ("How old is my father?" /
 * "六十三", "Leo, who is six"). The evidence tells the events ("WE'RE ENGAGED!", "Done, we bought the Kia
 * Niro!") or the number; the answer is worked out from the days they were said on, so no turn that
 * answers holds the unit, and one that happens to ("Three months notice…", "So close to two hours!",
 * any duration for "long", "the old Yamaha desk") is no nearer. "How many days a week do I swim?" and
 * "How long is my commute?" keep "days" and "long" (no difference): their evidence says them.
 */
const COUNTED_IN = new RegExp(
  String.raw`\bhow (?:many (?:more |fewer |whole |full )?(${TIME_UNITS})|(long|much time))\b(?=(?:\s+\S+){0,4}?\s+(?:${TIME_DIFFERENCE})\b)(?: (?:have |had |has |will have )?(passed|elapsed|gone by|went by))?` +
    String.raw`|\b(?:which|what) (month|year|day|week|date)\b|\bhow (old)\b` +
    String.raw`|(?:几|哪个)(月)份?|几(号)|(星期)几|(周)几`,
  'gi',
);

/** The terms of `query` that only name the unit its answer is counted or dated in (see COUNTED_IN): not search terms. */
export function countedInTerms(query: string): readonly string[] {
  const words: string[] = [];
  for (const match of query.matchAll(COUNTED_IN)) for (const group of match.slice(1)) if (group) words.push(group);
  return words.length > 0 ? uniqueTerms(words.join(' ')) : [];
}
