export { tokenize, uniqueTerms } from './tokenize.js';
export { countTextTokens } from './tokens.js';
export { bm25Idf, calibrateCosine, jaccard, keywordRelevance, sharedCount, UNKNOWN_TERM_WEIGHT } from './relevance.js';
export { mentionsSecretKeyword, redactSecrets, SecretScanner } from './secrets.js';
export { parseSecretRules, secretRules, type SecretRule } from './secret-rules.js';
export { glossary, Glossary, warmGlossary, type Alternatives, type GlossaryLanguage, type WeightedTerm } from './glossary.js';
export { alternativeTerms, crossLingualAlternatives, forUnknownTerms, matchedMass, queryMass } from './cross-lingual.js';
export { languageOf, type ScriptLanguage } from './languages.js';
