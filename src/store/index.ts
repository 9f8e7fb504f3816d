export { openDatabase, migrate, schemaVersion, checkIntegrity, REBUILD_DRIVER_FIX, type Db, type OpenOptions } from './database.js';
export { MIGRATIONS, type Migration } from './migrations.js';
export { StateStore } from './state.js';
export { WalCheckpointer, type CheckpointStatus } from './checkpointer.js';
export { StoreHealth, isStorageError, storageErrorCode, type StorageArea, type StoreHealthStatus } from './health.js';
