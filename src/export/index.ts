// Chat history export (SPEC §9): Markdown and PDF, both streamed to a writable.
export { writeMarkdownExport } from './markdown.js';
export { writePdfExport, type PdfExportOptions } from './pdf.js';
export { exportFilename, displayTime, type ExportInput } from './format.js';
