// export_chat_history end to end (test/suites/export.ts, shared with the PostgreSQL run).
import { exportSuites } from '../suites/export.js';

exportSuites();
