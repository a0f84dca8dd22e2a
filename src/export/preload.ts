// Loads the export's heavy modules (pdfkit with fontkit, sharp, the HTML sanitiser) in the
// background shortly after the server has started, one module per turn of the event loop.
// Loading a module is one synchronous block of 0.1-0.3 s that nothing can split: paid once while
// the server has just started instead of in the middle of the first export, so an export never
// holds the event loop that long (SPEC §10). Fonts are not parsed here (that costs memory a
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
