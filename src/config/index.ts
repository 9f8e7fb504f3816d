export { loadConfig, defaultConfig, isConfigKey, PROXY_KEY_VARIABLE, type LoadedConfig, type LoadOptions, type ConfigPaths } from './load.js';
export { setConfigValue, unsetConfigValue, updateConfigFile, parseValueForKey, definitionFor, CONFIG_FILE_MODE, type WriteOptions } from './edit.js';
export { configJsonSchema, writeConfigSchema, CONFIG_SCHEMA_FILE } from './json-schema.js';
export { resolveUpstreams, missingKeyVariables, detectFormat, type UpstreamTarget, type WireFormat, type KeySource } from './upstreams.js';
export {
  KEY_DEFINITIONS,
  DEFINITIONS_BY_KEY,
  KEY_ALIASES,
  MODES,
  CLAW_TYPES,
  missingOpdTeacherKeys,
  type ConfigKey,
  type ConfigValues,
  type UpstreamEntry,
} from './schema.js';
export { displayValue, maskSecret } from './convert.js';
export { DATABASE_URL_VARIABLE, maskDatabaseUrl, databaseUrlSchema } from './database-url.js';
export { metaclawHome, homeIsFileProblem, homePaths, expandHome, resolveConfiguredPath, type HomePaths } from './home.js';
export type { KeyDefinition, NoEffect, ValueKind } from './types.js';
export { noEffectWarning } from './effect.js';
export { PROVIDER_PRESETS, presetFor, type ProviderPreset } from './providers.js';
export {
  describeExposedConfig,
  exposedConfigFile,
  exposedConfigWarning,
  keysInConfigFile,
  makeHomePrivate,
  octal,
  openHomeWarning,
  openPath,
  PRIVATE_FILE_MODE,
  PRIVATE_FOLDER_MODE,
  type HomeOutcome,
  type OpenPath,
} from './privacy.js';
