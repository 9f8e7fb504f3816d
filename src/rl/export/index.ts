export { exportSamples, type ExportOptions, type ExportReport } from './export.js';
export { EXPORT_FORMATS, chatTurn, type ExportFormat, type ChatMessage, type ChatTurn, type TurnSource } from './formats.js';
