export { TOKENIZER_VERSION, tokenize, uniqueTerms } from './tokenize.js';
export { countTextTokens } from './tokens.js';
export {
  BACKGROUND_DOCUMENTS,
  blendedIdf,
  bm25Idf,
  calibrateCosine,
  jaccard,
  keywordRelevance,
  rareTermIdf,
  sharedCount,
  UNKNOWN_TERM_WEIGHT,
} from './relevance.js';
export { parseTermStatistics, termStatistics, type TermStatistics } from './term-statistics.js';
export { mentionsSecretKeyword, redactSecrets, SecretScanner } from './secrets.js';
export { parseSecretRules, secretRules, type SecretRule } from './secret-rules.js';
export {
  glossary,
  Glossary,
  glossaryLanguages,
  glossaryVersion,
  warmGlossary,
  type Alternatives,
  type GlossaryLanguage,
  type GlossaryWord,
  type WeightedTerm,
} from './glossary.js';
export { parseThesaurus, thesaurus, thesaurusVersion, type Thesaurus } from './thesaurus.js';
export { parseSimilarWords, SIMILAR_WORD_WEIGHT, similarWordAlternatives, similarWords, type SimilarWords } from './similar-words.js';
export { measureTerms, MEASURES_VERSION } from './measures.js';
export { titleTerms, TITLES_VERSION } from './titles.js';
export { alternativeTerms, crossLingualAlternatives, forUnknownTerms, matchedMass, queryMass } from './cross-lingual.js';
export { languageOf, type ScriptLanguage } from './languages.js';
export { adverbRootAlternatives, inflectionAlternatives, mergeAlternatives } from './inflections.js';
