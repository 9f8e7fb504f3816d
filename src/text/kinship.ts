import { glossTermOf } from './tokenize.js';

/**
 * Chinese kinship words the segmenter writes otherwise than the dictionary: as a bound character
 * ("妈", "弟") or glued to a pronoun as one word ("我妈", "我爸", "我哥"; its dictionary holds them).
 * The glossary reads them as the noun written alone ("妈妈": mom, mum, mother; its "妈" is "ma, mom"
 * and "我妈" no headword), and an English word translated to the noun also looks for those forms, so
 * "my mum" meets "我妈". Search terms stay as written: merging the forms into one term made it
 * commoner, and a question that needed "我妈" as a rarer word lost its turn.
 */
const KINSHIP_CHARACTERS = [...'妈爸哥姐弟妹'];
const PRONOUNS = ['', ...'我你他她咱'];

const NOUN_OF = new Map(KINSHIP_CHARACTERS.flatMap((character) => PRONOUNS.map((pronoun) => [pronoun + character, character + character] as const)));
const FORMS_OF = new Map(KINSHIP_CHARACTERS.map((character) => [character + character, PRONOUNS.slice(1).map((pronoun) => pronoun + character)] as const));

/** The kinship noun a segment stands for ("我妈" → "妈妈"), if it is a bound or glued form of one. */
export function kinshipNoun(segment: string): string | undefined {
  return NOUN_OF.get(segment);
}

/** The forms of a kinship noun glued to a pronoun ("妈妈" → 我妈, 你妈…); none for another word (searching the bare "爸" for "dad" too lost dev-cross questions @5). */
export function kinshipForms(noun: string): readonly string[] {
  return FORMS_OF.get(noun) ?? [];
}

/**
 * The English words of each kinship noun, every one of them its everyday sense. The dictionary lists
 * them as senses in turn ("妈妈": mom, mum, mother; "哥哥": older brother), so the reverse look-up
 * reached the noun from "mum" or "brother" as a second sense (0.6 of the word), and from "mother" not at all.
 */
const ENGLISH_OF: ReadonlyMap<string, readonly string[]> = new Map([
  ['妈妈', ['mum', 'mom', 'mother']],
  ['爸爸', ['dad', 'father']],
  ['哥哥', ['brother']],
  ['弟弟', ['brother']],
  ['姐姐', ['sister']],
  ['妹妹', ['sister']],
]);

/**
 * Relatives the dictionary writes as a path through another ("外婆": mother's mother, kept as "mother
 * maternal grandmother"; "侄女": "brother daughter niece"): the words of the path are no sense of the
 * noun (an English "mother" met every turn about a grandmother, and "niece" reached 侄孙女, a
 * grandniece, not 侄女). Their gloss is the relative's own English words.
 */
const RELATIVES: ReadonlyMap<string, readonly string[]> = new Map([
  ['侄女', ['niece']],
  ['外甥女', ['niece']],
  ['侄子', ['nephew']],
  ['外甥', ['nephew']],
  ['外婆', ['grandmother', 'grandma']],
  ['姥姥', ['grandmother', 'grandma']],
  ['奶奶', ['grandmother', 'grandma']],
  ['外公', ['grandfather', 'grandpa']],
  ['姥爷', ['grandfather', 'grandpa']],
  ['爷爷', ['grandfather', 'grandpa']],
  ['舅舅', ['uncle']],
  ['叔叔', ['uncle']],
  ['姑姑', ['aunt']],
  ['舅妈', ['aunt']],
]);

/** The English gloss of a relative the dictionary writes as a path through another ("外婆": grandmother, grandma); undefined for another word. */
export function relativeGloss(noun: string): string | undefined {
  return RELATIVES.get(noun)?.join(' ');
}

let nounsOfTerm: Map<string, string[]> | undefined;

/** The kinship nouns an English query term means ("mother" → 妈妈; "brother" → 哥哥, 弟弟). */
export function kinshipNounsOf(term: string): readonly string[] {
  if (!nounsOfTerm) {
    nounsOfTerm = new Map();
    for (const [noun, words] of [...ENGLISH_OF, ...RELATIVES])
      for (const word of words) {
        const stem = glossTermOf(word);
        if (stem !== undefined) nounsOfTerm.set(stem, [...(nounsOfTerm.get(stem) ?? []), noun]);
      }
  }
  return nounsOfTerm.get(term) ?? [];
}

/**
 * "爸妈" (mum and dad) is no dictionary word and the segmenter writes it as two (爸|妈, 我爸|妈): the
 * pair is read as 父母 (father, mother, parents), so "my parents" meets it.
 */
export function kinshipPair(first: string, second: string): string | undefined {
  return NOUN_OF.get(first) === '爸爸' && second === '妈' ? '父母' : undefined;
}

/** Changes with what a stored text's kinship words are glossed as: an index written with another reading is rebuilt (see `glossaryVersion`). */
export const KINSHIP_VERSION = 'kinship-3';
