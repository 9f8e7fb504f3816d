export { MetaclawRuntime, isLoopbackHost, type RuntimeOptions } from './app.js';
export { readPidFile, writePidFile, removePidFile, isProcessAlive, type PidInfo } from './pid-file.js';
