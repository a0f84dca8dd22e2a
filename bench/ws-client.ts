// A WebSocket client of the server for the benches (the `ws` package): calls answered by id,
// a hook for events, and frames such as unsubscribe that wait for their own answer.
import WebSocket from 'ws';

export class Socket {
  private next = 0;
  private readonly waiting = new Map<string, (frame: any) => void>();
  /** Every `event` frame, with the time it was read (performance.now()). */
  onEvent: (frame: any, at: number) => void = () => undefined;
  private onOther: (frame: any) => void = () => undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const at = performance.now();
      const frame = JSON.parse(String(raw));
      if (frame.type === 'result') {
        this.waiting.get(frame.id)?.(frame);
        this.waiting.delete(frame.id);
      } else if (frame.type === 'event') this.onEvent(frame, at);
      else this.onOther(frame);
    });
  }

  /** Opens a socket and authenticates it (which subscribes it to the holder's rooms). */
  static async open(url: string, token: string): Promise<Socket> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`, { perMessageDeflate: false });
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const socket = new Socket(ws);
    await socket.send({ type: 'auth', token }, 'auth_ok');
    return socket;
  }

  /** Sends a frame and waits for the first non-event, non-result frame of `type`. */
  send(frame: unknown, type: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.onOther = (f) => {
        if (f.type === type) resolve();
        else if (f.type === 'error') reject(new Error(JSON.stringify(f)));
      };
      this.ws.send(JSON.stringify(frame));
    });
  }

  /** A tool call; resolves with its `result` frame. */
  call(tool: string, args: unknown): Promise<any> {
    const id = String(++this.next);
    return new Promise((r) => {
      this.waiting.set(id, r);
      this.ws.send(JSON.stringify({ type: 'call', id, tool, args }));
    });
  }

  close(): void {
    this.ws.close();
  }
}
