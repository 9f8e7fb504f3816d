export { exportSamples, type ExportOptions, type ExportReport } from './export.js';
export { EXPORT_FORMATS, chatTurn, datumLine, type ExportFormat, type ChatMessage, type ChatTurn, type TinkerDatumLine } from './formats.js';
