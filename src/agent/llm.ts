// OpenAI-compatible chat completions (Ollama, vLLM, llama.cpp, LM Studio, OpenAI, …): the answer
// is streamed (`stream: true`, server-sent events) and read as it comes, so the agent can show
// progress; a server that ignores `stream` and answers with one JSON body works too. Cancelled
// through the turn's AbortSignal. `checkModelServer` runs once at start.
import { networkReason, StartError } from './connect.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface CompletionOptions {
  /** e.g. http://127.0.0.1:11434/v1 (the path up to /chat/completions). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  temperature?: number;
  maxTokens?: number;
  signal?: AbortSignal;
  /** Ask for a streamed answer (default true). */
  stream?: boolean;
  /** Called with the text so far while a streamed answer comes in. */
  onProgress?: (text: string) => void;
}

export class LlmError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}

function base(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

function headers(apiKey?: string): Record<string, string> {
  return { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
}

/** The text of `choices[0].message.content` (a string or content parts). */
function contentOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((part) => (typeof part === 'string' ? part : ((part as { text?: string }).text ?? ''))).join('');
  return null;
}

/** The error text of an answer body ({error: {message}} or {error: "…"}), cut for a skip reason. */
function errorText(raw: string): string {
  try {
    const body = JSON.parse(raw) as { error?: { message?: string } | string; message?: string };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (message) return message.slice(0, 160);
  } catch {
    // not JSON
  }
  return raw.replace(/\s+/g, ' ').trim().slice(0, 160);
}

export async function chatCompletion(messages: ChatMessage[], options: CompletionOptions): Promise<string> {
  const url = `${base(options.baseUrl)}/chat/completions`;
  const stream = options.stream ?? true;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: headers(options.apiKey),
      body: JSON.stringify({
        model: options.model,
        messages,
        stream,
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
      }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (options.signal?.aborted) throw err;
    throw new LlmError(`cannot reach the model server at ${base(options.baseUrl)} (${networkReason(err)})`);
  }
  if (!res.ok) {
    const raw = await res.text().catch(() => '');
    throw new LlmError(`model server answered HTTP ${res.status}${raw ? `: ${errorText(raw)}` : ''}`, res.status);
  }
  if (stream && (res.headers.get('content-type') ?? '').includes('text/event-stream') && res.body) {
    return readEventStream(res.body, options.onProgress);
  }
  const raw = await res.text();
  let body: { choices?: Array<{ message?: { content?: unknown } }> };
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    throw new LlmError(`model server sent no JSON: ${raw.slice(0, 200)}`);
  }
  const content = contentOf(body.choices?.[0]?.message?.content);
  if (content !== null) return content;
  throw new LlmError('model answer has no choices[0].message.content');
}

/** Reads `data: {…}` events until `data: [DONE]` (or the end), joining choices[0].delta.content. */
async function readEventStream(body: ReadableStream<Uint8Array>, onProgress?: (text: string) => void): Promise<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  const handle = (line: string): boolean => {
    if (!line.startsWith('data:')) return false; // comments (": keep-alive"), event names, ids
    const data = line.slice(5).trim();
    if (data === '[DONE]') return true;
    let chunk: { choices?: Array<{ delta?: { content?: unknown }; message?: { content?: unknown } }>; error?: { message?: string } | string };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      return false;
    }
    if (chunk.error) throw new LlmError(`model server error: ${typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? 'unknown')}`);
    const piece = contentOf(chunk.choices?.[0]?.delta?.content) ?? contentOf(chunk.choices?.[0]?.message?.content) ?? '';
    if (piece) {
      text += piece;
      onProgress?.(text);
    }
    return false;
  };
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (handle(line)) return text;
    }
  }
  if (buffer.trim()) handle(buffer.trim());
  return text;
}

/**
 * Checks the model server once at start: it answers GET /models, accepts the key, and lists the
 * model (when it lists any). A server without /models (404) is accepted as is.
 */
export async function checkModelServer(options: { baseUrl: string; model: string; apiKey?: string }): Promise<{ warning?: string }> {
  const url = base(options.baseUrl);
  let res: Response;
  try {
    res = await fetch(`${url}/models`, { headers: headers(options.apiKey), signal: AbortSignal.timeout(5000) });
  } catch (err) {
    throw new StartError(`Cannot reach the model server at ${url} (${networkReason(err)}); set --base-url`);
  }
  if (res.status === 401 || res.status === 403) throw new StartError(`The model server at ${url} refused the API key (HTTP ${res.status}); check --api-key-env`);
  if (res.status === 404) return { warning: `the model server at ${url} has no /models list; "${options.model}" is not checked` };
  if (!res.ok) throw new StartError(`The model server at ${url} answered HTTP ${res.status} to GET /models`);
  const body = (await res.json().catch(() => null)) as { data?: Array<{ id?: unknown }>; models?: Array<{ name?: unknown }> } | null;
  const ids = [...(body?.data ?? []).map((m) => m.id), ...(body?.models ?? []).map((m) => m.name)].filter((id): id is string => typeof id === 'string');
  if (ids.length === 0) return {};
  const wanted = options.model;
  // Ollama lists "qwen2.5:latest" for "qwen2.5"; some servers prefix an owner ("org/model").
  const served = ids.some((id) => id === wanted || id === `${wanted}:latest` || id.endsWith(`/${wanted}`));
  if (!served) {
    const list = ids.slice(0, 8).join(', ') + (ids.length > 8 ? ', …' : '');
    throw new StartError(`The model server at ${url} does not serve "${wanted}" (it lists: ${list}); set --model`);
  }
  return {};
}
