import { glossary, sharedCount, tokenize } from '../text/index.js';

/**
 * Standing instructions stated in plain words, told apart from one-off task requests, in English
 * and Chinese, without any LLM. A standing rule is general ("always…", "never…", "from now on…",
 * "every commit message must…", "we require…", "以后…", "每次…", "一律…", "不要再…"); a one-off
 * applies to this task ("this time…", "today…", "for this prototype only…", "今天先不用…"), and a
 * plain request ("please write…", "all prices on this screen need to…") is work, not a rule.
 * Correcting the assistant's previous answer ("No — you overwrote deploy.sh. Before you modify any
 * file, always…") is the strongest evidence: there a quantified or modal sentence is a rule too.
 * A rule stated for named things ("Before modifying day13/nginx.conf, create day13/nginx.conf.bak")
 * is an instance: it strengthens the general rule it applies rather than becoming one of its own.
 * Sentences are kept as the user's own words: a rewrite could flip a negation or drop a number.
 */

/**
 * Time-wide words that only prescribe: a sentence holding one states a rule ("from now on…",
 * "以后所有日志…", "一律", "不要再").
 */
const ALWAYS = [
  /\b(from now on|going forward|from here on|henceforth|as a rule|without exception|in all cases)\b/i,
  // "never … again" is a habit word's (HABIT): "My brother never calls anymore" tells, "Never do that again" orders.
  /\b(don't|do not|stop)\b.*\b(again|ever|any ?more)\b/i,
  /^\s*(please\s+)?stop \w+ing\b/i,
  // "以后" is "from now on" where a clause starts with it ("以后所有…", "我们以后…", "：以后…"), "after"
  // behind a verb or a noun ("退休以后", "回杭州以后"), "since" in "从那以后" (what happened since), and
  // "later" in "以后再说" (put off, no rule).
  /(^|[\s,，.。:：;；!！—–、]|我们|咱们|你们|大家|你|您|我|请|(?<![从自])那|所以|而且|另外|还有|都)(以后|今后|往后)(?!再(说|聊|讲|谈|议|商量))|今后|从现在起|从现在开始|从今以后|从今往后|从今天起|从今天开始|一律|不要再|别再|不许再|不准再|凡是|一概/,
];
/**
 * Habit words: "always", "never", "every time", "总是", "每次". They make a rule when the sentence is
 * about how things are to be done — said to the assistant, by a team, as the user's rule or choice —
 * and not when they tell what someone did or does ("Rui never asked for any of that", "I've never
 * run more than a bus stop", "香菜总是种不好"): a fact kept as a raw turn, not an instruction for
 * every prompt.
 */
const HABIT = [
  /\b(always|never|in (the )?future|every time|each time|whenever|any ?time (you|we))\b/i,
  /(每次|每当|每回|永远|总是|始终|任何时候|无论何时|此后)/,
];
/**
 * Set phrases with a habit word that say nothing of how anything is done: "never mind", and the
 * generic "you" of "You never know with these airlines" (anyone, not the assistant). Left out
 * before HABIT is read, so that "You never know, so always keep a backup" still counts its "always".
 */
const IDIOM = /\b(?:never mind|you never (?:know|can tell)|you can never (?:know|tell|be too \w+)|you(?:'ll|’ll| will) never (?:guess|believe))\b/gi;
/**
 * A habit told of someone else or of the past: the sentence opens with a third person before its
 * habit word ("My mom always says to just go for it", "我妈总是叫我多穿点", "老板每次都问我进度"), or
 * the habit is in the past tense, or it is what someone does when something happens ("Whenever it
 * rains, I use the bus"). Its "me", "we", "just go", "I use" or "问我" is what they say or do (to the
 * user), or what was done, no order to the assistant: PRESCRIBED does not count (a modal or a
 * correction still does).
 */
const TOLD_OF_SOMEONE = [
  /^\s*(?:(?:my|our)\s+(?:mom|mum|mother|dad|father|parents|brother|sister|wife|husband|partner|son|daughter|kids?|children|boss|manager|neighbou?r|friend|grandma|grandpa|grandmother|grandfather|aunt|uncle|cousin|cat|dog|landlord|teacher|coach|colleague|roommate)|he|she)\b[^,.;:]*?\b(?:always|never|every time|each time|whenever)\b/i,
  // Or of the past: "We always went to the beach when I was a kid", "我们小时候每次过年都回老家".
  /\b(?:we|you)\s+(?:always|never)\s+(?:used to|went|had|did|got|made|took|came|saw|ate|spent|was|were|knew|thought|(?!(?:need|feed|proceed|succeed|exceed|speed|embed|shred)\b)\w+ed)\b/i,
  /(小时候|那时候?|当年|那几年|上学的时候)[^，,。；;]*?(每次|每当|每回|总是|永远|始终|从来)/,
  /^\s*(?:我的?(?:妈妈?|爸爸?|父母|哥哥?|姐姐?|弟弟?|妹妹?|老婆|老公|爱人|儿子|女儿|孩子|家人|老板|领导|同事|朋友|邻居|室友|房东|老师|奶奶|爷爷|外婆|姥姥)|他们?|她们?|老板|领导|同事|邻居|房东|老师)[^，,。；;：:]*?(?:每次|每当|每回|总是|永远|始终|从来)/,
  // Or of what the user (or someone) does when something happens: a time clause, then a subject
  // other than "you"/"we" ("Whenever it rains, I use the bus"). Its "I use" is a habit, not the
  // user's choice for the assistant's work; a wish ("…, I want you to…") still counts.
  /^\s*(?:whenever|every time|each time|any ?time)\b[^,]{1,120},\s*(?:I(?!\s+(?:want|need|expect|prefer|would like|require|ask)\b)|he|she|they|(?:my|his|her|their)\s+\w+)\s/i,
];
/**
 * The same told habit in Chinese: "每次/每当 <something happens>，我都 <verb>" ("每次下雨我都用伞").
 * Its "都用" is the habit's verb, not the modal "都用" of "以后都用 Jest", so MODAL is read
 * without it. "我都要/都得/必须 …" still holds a modal, as "Whenever it rains, I have to…" does; a
 * subject of "你"/"我们" is said to the assistant or by a team ("每次部署我们都用蓝绿发布"), and no
 * subject at all is an order ("每次提交前先跑一遍 lint"): neither is matched here.
 */
const TOLD_HABIT_ZH =
  /^\s*(?:每次|每当|每回)[^，,。；;！!？?]{1,30}?[，,]?\s*(?:我|他们?|她们?|我的?(?:妈妈?|爸爸?|父母|哥哥?|姐姐?|弟弟?|妹妹?|老婆|老公|爱人|儿子|女儿|孩子|家人|老板|领导|同事|朋友|邻居|室友|房东|老师|奶奶|爷爷|外婆|姥姥))(?:也|就)?都(?!要|得|必须|需要|应该|应当|一定|不要|不能|不许|不准|只能|统一)(?:只?用)?/;
/**
 * Verbs that open an order to the assistant ("use tabs", "reply in French", "…, always check the
 * logs"): one list for the two places PRESCRIBED reads an order, each adding the verbs only its
 * own kind of sentence has (a sentence's own orders: "book", "deploy"; what to do whenever
 * something happens: "explain", "cite").
 */
const ORDER_VERBS = 'avoid|use|make|keep|put|write|send|reply|answer|add|name|run|check|ask|tell|give|format|include|mention|copy|save|commit|push|remind';
/** What makes a habit word prescribe (see HABIT). */
const PRESCRIBED = [
  // Said to the assistant, or by a team: "you", "we", "please"; 你, 我们, 请. ("Our cat always…" is not a team's.)
  /\b(you|your|we|let's|please)\b/i,
  // A convention for a kind of work product: "report files always get the date first", "commit messages never…".
  /\b(files?|reports?|exports?|commits?|commit messages?|messages?|docs|documents?|documentation|tests?|PRs?|pull requests?|branch(es)?|tables?|charts?|e-?mails?|code|names?|file ?names?|logs?|timestamps?|dates?|times|comments?|functions?|variables?|columns?|queries|query|scripts?|changelogs?|summaries|summary|answers?|replies|reply|titles?|headers?|backups?)\s+(always|never)\b/i,
  /(你|您|我们(?!的)|咱们(?!的)|大家|请)|(告诉|给|帮|发给?|提醒|通知|问|叫)我|都(把|先|给)/,
  // An order: the sentence, or a clause after a colon, dash or "so" / "and", starts with the verb.
  new RegExp(
    String.raw`(^|[:：—–]\s*)(always|never|don't|do not)\b|(^|[:：—–]\s*|\b(and|but|so|also|then|just)\s+)((always|never)\s+)?` +
      String.raw`(${ORDER_VERBS}|book|schedule|call|cc|merge|deploy|test|pick|choose|prefer|go)\b`,
    'i',
  ),
  // An order after a time phrase: "In the future, use tabs", "Every time, double-check the imports" (the
  // next word no subject: "Every time, the bus…" tells what happens), "Whenever I paste a trace, explain…".
  /^\s*(?:[Ii]n (?:the )?future|[Ee]very time|[Ee]ach time),\s*(?:please\s+)?(?!(?:i|we|you|he|she|it|they|my|our|your|his|her|their|its|the|a|an|this|that|these|those|there|nobody|everyone|someone|people)\b)[a-z]/,
  new RegExp(
    String.raw`^\s*(?:whenever|every time|each time|any ?time)\b[^,]{1,120},\s*(?:please\s+)?(?:(?:always|never|first)\s+)?` +
      String.raw`(?:${ORDER_VERBS}|respond|double-check|explain|cite|show|list|summari[sz]e|translate|confirm|warn|mark|label|link|quote|flag|point out)\b`,
    'i',
  ),
  // The same in Chinese, which has no subject to tell an order by: a habit word opening the sentence
  // before how to answer ("总是用中文回答"), or after a kind of work product ("回复永远用中文"), and not
  // "香菜总是种不好".
  /^\s*(请)?(总是|永远|始终)(都)?(要)?(用|使用|以|先|回答|回复|给出|列出|注明|附上|标注|说明)/,
  /(回复|回答|答案|代码|注释|文件名|文件|日志|提交信息|报告|文档|表格|邮件|标题|日期|时间戳|变量名|函数名|输出|结果)(都)?(总是|永远|始终|每次)(都)?(要)?(用|使用|以|写|带|加|放|按|先|保留|注明|附上|统一)/,
  // And "每次…前/后/时" opening the sentence, then straight (no subject: "每次考试前我都很紧张" tells)
  // "先" and a verb of work: "每次提交前先跑一遍 lint". A verb of life ("每次下班后先去健身房") is a habit.
  /^\s*(请)?(每次|每当|每回)[^，,。；;！!]{1,30}?(之前|之后|以前|以后|前|后|时|的时候)[，,]?\s*(都)?(要|得)?先\s*(跑(?!步)|运行|执行|检查|核对|确认|备份|测试|格式化|更新|拉取|同步|保存|提交|编译|构建|打包|列出|说明|注明|提醒|告诉|通知|问|看一下|看一遍|review|lint|test|build)/i,
  // Named as a rule or a convention.
  /\b(rule|rules|convention|policy|standard|guideline|requirement)\b/i,
  /(规矩|规定|规范|约定|原则|惯例|要求)/,
  // The user's own choice: "I use pnpm for every project, never npm", "I prefer…", "我习惯用…".
  /\bI\s+(?:\w+ly\s+)?(?:always\s+|never\s+|only\s+)?(use|want|prefer|like|choose|pick|book|write|code|commit)\b/i,
  /我(一般|平时|通常|总是|每次|从来)?(都)?(用|要|只用|喜欢|习惯|希望)/,
];
/** Words that set a rule's time: they outlast a one-off clause before them. */
const FROM_NOW_ON = [
  /\b(from now on|going forward|from here on|henceforth|in (the )?future)\b/i,
  /(以后|今后|往后|此后|从现在起|从现在开始|从今以后|从今往后|从今天起|从今天开始)/,
];
/** A quantifier ("all", "every", "所有") makes a rule only with a modal, and only with support. */
const QUANTIFIER = [/\b(all|every|each|any)\b(?! (right|the same|in all))/i, /(所有|任何|全部|每个|每一个|每份|每篇|每条|每一)/];
const MODAL = [
  /\b(must|mustn't|should|shouldn't|shall|need to|needs to|have to|has to|are required to|is required to|ought to|(have|has) got to)\b/i,
  /\b(is|are) (not )?(allowed|permitted|required|mandatory|forbidden)\b|\b(needs|requires) (a|an|its|their|to)\b/i,
  /(必须|务必|一定要|都要|都得|都用|要|需要|应该|应当|不要|不能|不许|不准|禁止|只能|只用|统一)/,
];
/** "any file you create", "every report you write", "你写的所有文档": about the assistant's own work. */
const OWN_WORK = [
  /\b(all|every|each|any)\s+[\w\s-]{0,30}?\b(you|we)\s+(write|create|add|make|produce|send|generate|commit|touch|modify|change|edit|open|save|output|build|deploy|push|run|use|put|name|finish|complete|start)\b/i,
  /你(写|加|新增|创建|生成|提交|改|修改|做|输出|发)的/,
];
/**
 * A condition that recurs ("before you modify…", "whenever…", "修改…之前", "你…的时候"). A bare
 * "…的时候" ("when") is as often how a feature is asked for ("扫码失败的时候要告诉用户…"), as "when
 * the request times out, say so" is: it counts only about the assistant's work or every time.
 */
const CONDITION = [
  /(^|[:：—–]\s*)(before|after|whenever|each time|every time|once)\s+(you|we|anyone|someone|\w+ing)\b/i,
  /(之前|之后)|(你|我们|每次|每当|凡是)[^，,。；;]*的时候/,
];
/**
 * A recurring point in the work, then an order: "Before every commit, run lint first", "After each
 * merge, delete the branch", "Before any deploy, always run the tests". The verb must open what
 * follows the comma: "Before every flight, I have to take a pill" tells the user's own habit.
 */
const EVERY_POINT_ORDER =
  /^\s*(?:before|after|on|with)\s+(?:every|each|any)\s+[^,;]{1,80},\s*(?:please\s+)?(?:(?:always|first|also)\s+)?(?:run|re-?run|check|double-check|test|lint|format|update|bump|back up|backup|copy|save|commit|push|pull|rebase|squash|tag|delete|remove|clean up|write|add|create|make|use|put|keep|name|include|append|log|ask|tell|remind|confirm|review|verify|build|compile|notify|send|mention|note|record|document|regenerate|refresh|clear|sign|attach|announce|archive)\b/i;
const PREFERENCE = [
  /\b(i prefer|i'd prefer|i would prefer|my preference is|i like it when|we require|required:|our (convention|rule|policy|standard|style|practice) (is|says)|the (convention|rule|policy|standard) (here )?(is|says))\b/i,
  /(我(更)?喜欢|我希望你(以后|总是|都)|我们的(规矩|规范|规定|约定|惯例)|按照惯例)/,
];
/** What one task asks for, however general it sounds. */
const ONE_OFF = [
  /\btoday\b(?!'s)|\b(tonight|tomorrow|yesterday)\b|\bthis (morning|afternoon|evening|week|weekend|sprint|release)\b/i,
  /\b(this|that) (time|once|one)\b|\b(for|right) now\b|\bjust (for|this|that|once|now)\b|\bonly (for )?(this|that|now|once|today)\b/i,
  /\bfor (this|that|the) (\w+ ){0,2}only\b|\bfor (this|that) (one|task|file|ticket|pr|prototype|hotfix|case|change|release|demo|script)\b/i,
  /(?<!从)今天(?!起|开始)|今晚|明天|昨天|这次|本次|这一次|这回|这一回|暂时|先不用|先不要|先别|刚才|临时|仅此一次|就这一次|这个(文件|任务|函数|需求|版本|接口|页面)/,
];
/** Named things: a path, a file, a date, a ticket. Examples ("like `[PED-1] …`") are left out first. */
const SPECIFIC = [
  /(^|[\s`'"(（])([\w.-]+\/)+[\w.-]*/,
  /\b[\w-]{2,}\.[a-z]{1,5}\b/i,
  /\b\d{4}-\d{2}-\d{2}\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}\b|\d{1,2}月\d{1,2}[日号]/i,
  /\b[A-Z][A-Z0-9]+-\d+\b/,
  /^\s*(the|this|that|these|those|it|its)\b/i,
];
const EXAMPLE = /(?:[,(—–:-]\s*|\s)(like|e\.g\.?|for example|for instance|such as|say|比如|例如|譬如)[\s:：].*$/i;
/** An instruction about named things (the form per-instance copies of a rule take). */
const INSTRUCTION = [
  /^\s*(please\s+)?(add|create|make|use|put|run|write|keep|name|back up|backup|copy|update|include|start|end|append|log|pin|set|save|move|commit|mention|don't|do not|avoid)\b/i,
  ...MODAL,
];
/** The message corrects the assistant's last answer. */
const CORRECTION = [
  /^\s*(no|nope|wrong|not quite|not like that|that's (not|wrong|incorrect)|that is (not|wrong)|this is (not|wrong)|ugh)\b/i,
  /\byou (\w+ )?(forgot|didn't|did not|missed|overwrote|ignored|broke|skipped|dropped|left out)\b/i,
  /\b(wrong|incorrect|not what i (asked|wanted|said)|i (already )?(told|asked) you|as i said|wasn't|weren't)\b/i,
  /^(不对|不是|错了|不行|又|怎么又|你又)|你又|又忘|忘了|怎么又|不是说过|说过了|跟你说过|没有按|又写成|又用/,
];
/** The user replaces an earlier rule. */
const CHANGE = [
  /\b(change of plan|changed? my mind|instead( of)?|no longer|any ?more|rather than|switch(ing)? (to|from)|new rule|not \w+ but)\b/i,
  /(改成|改为|换成|改用|不再|不要再|别再|而不是|改一下|变成|取代|代替)/,
];
/**
 * Said outside the rule, only words that announce a new rule count as a change: "instead", "改成",
 * "换成" there are as often about the task a correction complains of ("你把标题改成英文了", "you
 * used tabs instead").
 */
const ANNOUNCE = [
  /\b(change of plan|changed? my mind|no longer|new rule|(rule|convention|policy|plan) (has |have )?changed|scratch that)\b/i,
  /(不再|规则改|改规则|规定改|新规定|新规则|换个规则)/,
];
/** The user repeats an earlier rule. */
const REMINDER = [
  /\b(again|remember|reminder|as i said|i (already )?told you|don't forget|do not forget|keep in mind|as always|like i said|once more)\b/i,
  /(记住|别忘了|不要忘了|再说一遍|又忘|提醒一下|说过)/,
];
/** Questions and hypotheticals state no rule. */
const NOT_A_RULE = [
  /\?\s*$/,
  /？\s*$/,
  /^\s*(if|what if|should i|can you|could you|would you|do you|does|is it|are there|how|why|when|what)\b/i,
  /^\s*(如果|假如|是否|能不能|可不可以|怎么|为什么)|吗[。.]?\s*$/,
];

export interface RuleContext {
  /** The assistant's answer just before this message, if any: a correction needs something to correct. */
  previousReply?: string | undefined;
}

export interface StatedRule {
  sentence: string;
  /** `rule`: stated generally; `instance`: the same kind of instruction for named things only. */
  kind: 'rule' | 'instance';
  /** Said while correcting the assistant's previous answer. */
  corrective: boolean;
  /** Says an earlier rule changed ("change of plan", "instead", "不再"). */
  change: boolean;
  /** Says it repeats an earlier rule ("again", "remember", "记住"). */
  reminder: boolean;
  /**
   * The message's sentences that state no rule, where users say what went wrong or what changed
   * ("toasts are no longer for errors.", "Maya had to convert that CSV by hand again."): they name
   * the earlier rule a new one replaces when the rule itself does not.
   */
  context: string;
  /** Those of them that announce a change ("toasts are no longer for errors."): they say what the replaced rule was about. */
  announcement: string;
}

/** The sentences of `text` that state a standing rule (or an instance of one), verbatim. */
export function detectRules(text: string, context: RuleContext = {}): StatedRule[] {
  const corrective = context.previousReply !== undefined && context.previousReply.trim() !== '' && matches(CORRECTION, text);
  const found: Array<{ sentence: string; kind: StatedRule['kind'] }> = [];
  const others: string[] = [];
  for (const sentence of splitSentences(text)) {
    const before = found.length;
    for (const part of generalParts(sentence.trim())) {
      if (part.length < 8 || part.length > 400) continue;
      const kind = classify(part, corrective);
      if (kind) found.push({ sentence: part, kind });
    }
    if (found.length === before) others.push(sentence.trim());
  }
  // A change is often said on its own ("Update from the review: toasts are no longer for errors."), before the rule that replaces.
  const announcement = others.filter((sentence) => matches(ANNOUNCE, sentence)).join(' ');
  const reminder = matches(REMINDER, text);
  return found.map(({ sentence, kind }) => ({
    sentence,
    kind,
    corrective,
    change: announcement !== '' || matches(CHANGE, sentence),
    reminder,
    context: others.join(' '),
    announcement,
  }));
}

/**
 * The parts of a sentence not limited to this task. A one-off clause ("this time…", "今天…")
 * limits itself and what follows it ("For today only, always reply in French"), unless what
 * follows sets its own time ("这次先手动改，以后所有日志时间都用 UTC").
 */
function generalParts(sentence: string): string[] {
  if (!matches(ONE_OFF, sentence)) return [sentence];
  const parts: string[] = [];
  let run: string[] = [];
  let limited = false;
  const flush = () => {
    const part = run
      .join('')
      .trim()
      .replace(/[\s,，:：;；—–-]+$/, '');
    if (part && (!limited || matches(FROM_NOW_ON, part))) parts.push(part);
    run = [];
  };
  for (const clause of sentence.split(/(?<=[,，:：—–])/)) {
    if (matches(ONE_OFF, clause)) {
      flush();
      limited = true;
    } else run.push(clause);
  }
  flush();
  return parts;
}

function classify(sentence: string, corrective: boolean): StatedRule['kind'] | undefined {
  if (matches(NOT_A_RULE, sentence)) return undefined;
  const toldHabit = TOLD_HABIT_ZH.test(sentence);
  // What follows a told habit's "我都用" is what is done, read for a modal or an order of its own.
  const afterHabit = toldHabit ? sentence.replace(TOLD_HABIT_ZH, '') : undefined;
  const modal = matches(MODAL, afterHabit ?? sentence);
  if (matches(ALWAYS, sentence)) return 'rule';
  if (
    matches(HABIT, sentence.replace(IDIOM, '')) &&
    (modal || corrective || (!toldHabit && !matches(TOLD_OF_SOMEONE, sentence) && matches(PRESCRIBED, sentence)) || matches(PREFERENCE, sentence))
  )
    return 'rule';
  const specific = matches(SPECIFIC, sentence.replace(EXAMPLE, ''));
  // A recurring condition, then what to do ("before you modify X, copy it"; "改了 X 之后也要…").
  const condition =
    (matches(CONDITION, sentence) && matches(INSTRUCTION, afterHabit ?? sentence.replace(/^[^,，]*?(,|，|之前|之后|的时候)\s*/, ''))) ||
    EVERY_POINT_ORDER.test(sentence);
  // Quantified or modal sentences are also how one task is specified ("all prices on the receipt
  // screen need to be right-aligned"): they are rules only with something more.
  const general =
    matches(PREFERENCE, sentence) ||
    condition ||
    (matches(QUANTIFIER, sentence) && modal && (corrective || matches(OWN_WORK, sentence))) ||
    (corrective && modal && /\b(you|we)\b|你|我们/i.test(sentence));
  if (general) return specific ? 'instance' : 'rule';
  if (corrective && specific && matches(INSTRUCTION, sentence)) return 'instance';
  return undefined;
}

function matches(patterns: readonly RegExp[], text: string): boolean {
  return patterns.some((pattern) => pattern.test(text));
}

function splitSentences(text: string): string[] {
  // Semicolons join the clauses of one thought ("never add a ^ range; we require exact versions"): kept together.
  return text
    .replace(/```[\s\S]*?```/g, ' ')
    .split(/(?<=[.!。！])\s+|(?<=[。！])|\n+/)
    .map((sentence) => sentence.replace(/^[-*•\d.)\s]+/, ''))
    .filter(Boolean);
}

/* ---------- what a rule is about ---------- */

/** Words that make a sentence a rule but say nothing about what the rule is about. */
const RULE_WORDS = new Set(
  tokenize(
    'always never must should need have required require requires from now on going forward future change plan every each all any please make sure prefer preference rule policy convention standard style instead rather first again remember reminder 以后 今后 从现在起 每次 一律 总是 始终 永远 务必 必须 一定要 不要 别再 禁止 不许 不准 统一 请用 都用 都要 改成 改为 记住 又 先',
  ),
);
const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/;

/** What a rule is about: its content terms, and the English terms its Chinese or Japanese ones stand for. */
export interface RuleSubject {
  terms: ReadonlySet<string>;
  /** Per Chinese or Japanese term, its English translations by the bundled glossary (rule words left out). */
  english: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * What a rule is about: its content words without the rule words, names split at dots and slashes
 * ("CHANGELOG.md" is about "changelog"). "all output files must be named YYYYMMDD_<name>" and
 * "change of plan: all output files must be named <name>_final" are both about "output files named".
 * A rule in Chinese or Japanese also carries its words' English translations, so that a rule
 * replaced in another language ("以后报告里的金额保留两位小数" after "round every currency amount
 * in the reports") can be linked to the one it replaces.
 */
export function ruleSubject(sentence: string): RuleSubject {
  const text = sentence.replace(EXAMPLE, '');
  const terms = new Set(
    tokenize(text)
      .flatMap((term) => term.split(/[./]/))
      .filter((term) => (term.length > 1 || CJK.test(term)) && !RULE_WORDS.has(term)),
  );
  const english = new Map<string, Set<string>>();
  const words = glossary();
  for (const { headword, language, sources } of words.words(text)) {
    // A single character has too many senses to link rules by; a word, every sense the glossary keeps
    // (格式 is "form, specification, format": the rule about a format says "format").
    if (headword.length < 2) continue;
    const translations = (words.english(headword, language) ?? []).map(({ term }) => term).filter((term) => !RULE_WORDS.has(term));
    for (const source of sources) {
      if (!terms.has(source) || translations.length === 0) continue;
      const known = english.get(source) ?? new Set<string>();
      for (const translation of translations) known.add(translation);
      english.set(source, known);
    }
  }
  return { terms, english };
}

/**
 * Whether two rule subjects are about the same thing (so the newer rule replaces or restates the
 * older). Across languages only what both hold can count: names, formats, files ("WebP",
 * "assets/img", "UTC"), and words the glossary translates, so two of them must agree.
 */
export function sameSubject(a: RuleSubject, b: RuleSubject): boolean {
  if (isChinese(a.terms) !== isChinese(b.terms)) return crossOverlap(a, b, 2) >= 0.5;
  if (a.terms.size === 0 || b.terms.size === 0) return false;
  const shared = sharedCount(a.terms, b.terms);
  return shared / (a.terms.size + b.terms.size - shared) > 0.5 || (shared >= 2 && shared / Math.min(a.terms.size, b.terms.size) >= 0.75);
}

/**
 * How closely a rule the user says has changed ("change of plan: …", "不要再…") matches an earlier
 * one: the share of the smaller subject they hold in common, from two shared words (across
 * languages, from one shared name or translated word: the change itself says a rule is being replaced).
 */
export function changedSubject(earlier: RuleSubject, changed: RuleSubject): number {
  return isChinese(earlier.terms) !== isChinese(changed.terms) ? crossOverlap(earlier, changed, 1) : overlap(earlier.terms, changed.terms, 2);
}

/** Whether an instance ("before modifying day13/nginx.conf, create day13/nginx.conf.bak") applies this rule. */
export function appliesRule(rule: RuleSubject, instance: RuleSubject): number {
  return isChinese(rule.terms) !== isChinese(instance.terms) ? crossOverlap(rule, instance, 2) : overlap(rule.terms, instance.terms, 2);
}

/** Share of the smaller set the two hold in common, 0 below `least` shared members. */
function overlap(a: ReadonlySet<string>, b: ReadonlySet<string>, least: number): number {
  const shared = sharedCount(a, b);
  return shared < least ? 0 : shared / Math.min(a.size, b.size);
}

/**
 * Overlap of subjects in two languages: the best of the names they share (as a share of the
 * smaller set of names) and the English subject's terms the other one holds or translates to (as a
 * share of the smaller of the English subject and the other's terms that can be compared: its names
 * and its words the glossary has).
 */
function crossOverlap(a: RuleSubject, b: RuleSubject, least: number): number {
  const names = overlap(latin(a.terms), latin(b.terms), least);
  const [foreign, english] = isChinese(a.terms) ? [a, b] : [b, a];
  const reached = new Set<string>();
  let comparable = 0;
  for (const term of foreign.terms) {
    const translations = CJK.test(term) ? foreign.english.get(term) : new Set([term]);
    if (!translations) continue;
    comparable++;
    for (const translation of translations) if (english.terms.has(translation)) reached.add(translation);
  }
  const translated = reached.size < least ? 0 : reached.size / Math.min(comparable, english.terms.size);
  return Math.max(names, translated);
}

function isChinese(subject: ReadonlySet<string>): boolean {
  for (const term of subject) if (CJK.test(term)) return true;
  return false;
}

function latin(subject: ReadonlySet<string>): Set<string> {
  return new Set([...subject].filter((term) => !CJK.test(term)));
}

/* ---------- what replaces what ---------- */

/** Latin runs in a sentence: words, names, files, formats ("CSV", ".xlsx", "ErrorBanner", "en.json"). */
const LATIN_RUN = /[.`]?[A-Za-z0-9][\w./+#-]*/g;
/** A run that names a thing in English text: code, an acronym, a number, a file or extension, a CamelCase name. */
const NAME_LIKE = /^`|^[A-Z0-9+#]{2,}$|\d|\w[./_]\w|^\.\w|[a-z][A-Z]/;
/** What ends a sentence or clause, so that the word after it is capitalised anyway. */
const SENTENCE_START = /(^|[.!?:;—–"'“(（])\s*$/;

/**
 * The things a rule names, as terms: formats, files, tools and code ("CSV", ".xlsx", "ErrorBanner",
 * a capitalised "Excel" inside a sentence), and in Chinese or Japanese text every Latin word
 * ("用 Toast 组件"). Two rules about one thing that name different ones say different things.
 */
export function namesIn(sentence: string): Set<string> {
  const cjk = CJK.test(sentence);
  const names = new Set<string>();
  for (const match of sentence.matchAll(LATIN_RUN)) {
    const run = match[0].replace(/[.`]+$/, '');
    const capitalised = /^[A-Z][a-z]/.test(run) && !SENTENCE_START.test(sentence.slice(0, match.index));
    if (!cjk && !capitalised && !NAME_LIKE.test(run)) continue;
    for (const term of tokenize(run).flatMap((word) => word.split(/[./]/))) if (term.length > 1 && !RULE_WORDS.has(term)) names.add(term);
  }
  return names;
}

/** A rule read once for comparing it with others: what it is about and the things it names. */
export interface RuleReading {
  sentence: string;
  subject: RuleSubject;
  names: ReadonlySet<string>;
}

export function readRule(sentence: string): RuleReading {
  return { sentence, subject: ruleSubject(sentence), names: namesIn(sentence) };
}

/** Whether a new rule names things for its subject and none of those an earlier rule names (which names some). */
function namesAnother(earlier: RuleReading, rule: RuleReading): boolean {
  return earlier.names.size > 0 && rule.names.size > 0 && ![...rule.names].some((name) => earlier.names.has(name));
}

/** What a rule said to change is about, with the sentence that announced the change if it was said apart. */
export function announcedSubject(rule: RuleReading, announcement: string): RuleSubject {
  return announcement === '' ? rule.subject : ruleSubject(`${rule.sentence} ${announcement}`);
}

/**
 * How close a rule said to change ("change of plan", "instead", "不再") is to an earlier one it may
 * replace, by what it is `announced` to be about (`announcedSubject`, `changedSubject`); a rule it
 * names another thing for ("… with Vitest instead" after "以后写测试都用 Jest") comes before one that
 * only shares words with it ("give every test a descriptive name"), in any language.
 */
export function replacing(earlier: RuleReading, rule: RuleReading, announced: RuleSubject): number {
  const score = changedSubject(earlier.subject, announced);
  return score > 0 && namesAnother(earlier, rule) ? 1 + score : score;
}

/** How much of an earlier rule a new one about the same thing must share to replace it by naming another thing. */
const CONTRADICTS = 0.5;

/**
 * How clearly a new rule replaces an earlier one without saying "instead": it names something else
 * for the same thing ("write all new tests with Vitest" after "以后写测试都用 Jest"), or what the
 * message says around it names what the earlier one prescribed while the rule names another thing
 * ("Maya had to convert that CSV by hand again. From now on export every table as an .xlsx
 * workbook."). `contextNames` are the things that message names (`namesIn`). Scored as
 * `changedSubject`; 0 when it does not replace it.
 */
export function contradicts(earlier: RuleReading, rule: RuleReading, contextNames: ReadonlySet<string>): number {
  if (!namesAnother(earlier, rule)) return 0;
  const score = changedSubject(earlier.subject, rule.subject);
  const named = [...earlier.names].some((name) => contextNames.has(name));
  return named || score >= CONTRADICTS ? score : 0;
}

/* ---------- per-instance copies ---------- */

const NAMED_THING = /(?:[\w.-]+\/)+[\w.-]*[\w-]|\b[\w-]{2,}(?:\.[a-z0-9]{1,5})+\b/gi;

/**
 * An instance with the things it names replaced by placeholders, in the user's own words: two
 * instances with the same template state one rule ("Before modifying <file>, create <file>.bak.").
 */
export function instanceTemplate(sentence: string): string {
  const names: string[] = [];
  // Shortest first, and a longer name holding a shorter one is not replaced apart: "deploy.sh.bak" becomes "<file>.bak".
  const found = [...new Set(sentence.match(NAMED_THING) ?? [])].sort((a, b) => a.length - b.length);
  for (const name of found) if (!names.some((shorter) => name.startsWith(shorter))) names.push(name);
  let template = sentence;
  names.forEach((name, index) => {
    template = template.split(name).join(names.length === 1 ? '<file>' : `<file ${index + 1}>`);
  });
  return template;
}
