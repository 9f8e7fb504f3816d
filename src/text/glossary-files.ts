/**
 * The bundled glossary files per language, in the order they are read: a later file's line replaces
 * an earlier one's for the same headword (the proper nouns, `zh-en-names.tsv.gz`, are built apart
 * from the main file). The glossary reads them all; Chinese word segmentation reads the Chinese
 * headwords (chinese-words.ts).
 */
export const GLOSSARY_FILES = {
  zh: [new URL('../../data/glossary/zh-en.tsv.gz', import.meta.url), new URL('../../data/glossary/zh-en-names.tsv.gz', import.meta.url)],
  ja: [new URL('../../data/glossary/ja-en.tsv.gz', import.meta.url)],
} as const satisfies Record<string, readonly URL[]>;

export const CHINESE_GLOSSARY_FILES: readonly URL[] = GLOSSARY_FILES.zh;
