export { tokenize, uniqueTerms } from './tokenize.js';
export { countTextTokens } from './tokens.js';
