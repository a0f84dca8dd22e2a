// Layering of src/ (checked in .ci/run): arrows go down only,
//   transports → tools → runtime → domain → storage
// with the composition roots (app.ts, server.ts, cli.ts) on top and small shared leaves
// (types, errors, config, logger, paths) usable from anywhere. No cycles between folders.
const transports = '^src/(transports|mcp|gateways)/';
const tools = '^src/tools/';
const runtime = '^src/(runtime|events)/';
const domain = '^src/(rounds|rooms|messages|identity|limits|protocol|export)/';
const storage = '^src/storage/';
const roots = '^src/(app|server|cli|index|backup)\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-folder-cycles', severity: 'error', scope: 'folder', from: { path: '^src/' }, to: { circular: true } },
    { name: 'no-module-cycles', severity: 'error', from: { path: '^src/' }, to: { circular: true } },
    { name: 'storage-is-the-bottom', severity: 'error', from: { path: storage }, to: { path: [transports, tools, runtime, domain, roots] } },
    { name: 'domain-below-runtime', severity: 'error', from: { path: domain }, to: { path: [transports, tools, runtime, roots] } },
    { name: 'runtime-below-tools', severity: 'error', from: { path: runtime }, to: { path: [transports, tools, roots] } },
    { name: 'tools-below-transports', severity: 'error', from: { path: tools }, to: { path: [transports, roots] } },
    { name: 'transports-not-roots', severity: 'error', from: { path: transports }, to: { path: '^src/(server|cli|index|backup)\\.ts$' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
