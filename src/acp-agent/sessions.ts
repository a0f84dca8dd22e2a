// The ACP session of each room, kept in the runner's state directory (next to the saved tokens,
// agents.json) so a restarted runner asks the agent to `session/load` it instead of starting
// over. With each session: the seq of the last room message the agent was shown, so the next
// prompt holds only what is new. The file is private to its owner and replaced atomically.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { serverBase } from '../agent/connect.js';

export interface SavedSession {
  session_id: string;
  /** Highest seq of the room the agent has seen in this session (0: none yet). */
  last_seq: number;
}

interface SessionFile {
  sessions: Record<string, SavedSession>;
}

export class SessionStore {
  private readonly file: string;
  private writing: Promise<void> = Promise.resolve();

  /** `command` tells sessions of different agent programs apart (each has its own ids). */
  constructor(
    dir: string,
    private readonly scope: { url: string; name: string; command: string },
  ) {
    this.file = path.join(dir, 'acp-sessions.json');
  }

  private key(roomId: string): string {
    return [serverBase(this.scope.url), this.scope.name.normalize('NFC').toLowerCase(), roomId, this.scope.command].join('|');
  }

  private async read(): Promise<SessionFile> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as Partial<SessionFile>;
      return { sessions: parsed.sessions && typeof parsed.sessions === 'object' ? parsed.sessions : {} };
    } catch {
      return { sessions: {} };
    }
  }

  async get(roomId: string): Promise<SavedSession | null> {
    await this.writing;
    const saved = (await this.read()).sessions[this.key(roomId)];
    return saved && typeof saved.session_id === 'string' && Number.isInteger(saved.last_seq) ? saved : null;
  }

  /** Stores (or with null, forgets) a room's session; writes run one after the other. */
  set(roomId: string, session: SavedSession | null): Promise<void> {
    const write = async () => {
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      const content = await this.read();
      if (session) content.sessions[this.key(roomId)] = session;
      else delete content.sessions[this.key(roomId)];
      const temp = `${this.file}.${process.pid}.tmp`;
      await writeFile(temp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
      await rename(temp, this.file);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }
}
