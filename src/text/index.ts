export { tokenize, uniqueTerms } from './tokenize.js';
export { countTextTokens } from './tokens.js';
export { bm25Idf, calibrateCosine, jaccard, keywordRelevance, sharedCount, UNKNOWN_TERM_WEIGHT } from './relevance.js';
