// Library entry: embed the server (tests, tools) without the CLI.
export { startServer, type RunningServer } from './server.js';
export { loadConfig, testConfig, type Config } from './config.js';
export { createLogger } from './logger.js';
