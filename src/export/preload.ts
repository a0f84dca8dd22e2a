// Loads the export's heavy modules (pdfkit with fontkit, sharp, the HTML sanitiser) while the
// server starts (server.ts: beside the store's opening, before it listens), one module per turn
// of the event loop. Loading a module is one synchronous block of 0.1-0.3 s that nothing can
// split: paid before the first request instead of in the middle of the first export or of a
// conversation (loaded in the background after listening, it held a turn hand-off 170 ms), so
// nothing holds the event loop that long (SPEC §10). Fonts are not parsed here (that costs memory a
// server that never exports should not pay, and is cheap and asynchronous at the first export).
let started: Promise<void> | null = null;

export function preloadExportModules(): Promise<void> {
  started ??= (async () => {
    const step = async (load: () => Promise<unknown>): Promise<void> => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await load().catch(() => undefined); // the export itself reports what is missing
    };
    await step(() => import('./pdf.js'));
    await step(() => import('./images.js'));
    await step(() => import('./html.js'));
    await step(() => import('./import.js'));
  })();
  return started;
}
