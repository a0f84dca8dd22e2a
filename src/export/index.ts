// Chat history export (SPEC §9): Markdown, PDF, HTML and the JSON room format, each streamed to
// a writable; and the import of a JSON export.
export { writeMarkdownExport } from './markdown.js';
export { writePdfExport, type PdfExportOptions } from './pdf.js';
export { writeHtmlExport } from './html.js';
export { writeJsonExport, ROOM_FORMAT, ROOM_FORMAT_VERSION, type RoomExportV1 } from './json.js';
export { parseRoomFile, buildImport } from './import.js';
export { exportFilename, displayTime, type ExportInput, type ExportFormat } from './format.js';
