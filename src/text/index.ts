export { tokenize, uniqueTerms } from './tokenize.js';
export { countTextTokens } from './tokens.js';
export { keywordRelevance } from './relevance.js';
