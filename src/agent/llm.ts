// A minimal OpenAI-compatible chat-completions call (Ollama, vLLM, llama.cpp, OpenAI, …):
// one POST, no streaming, cancelled through the turn's AbortSignal.

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

export async function chatCompletion(messages: ChatMessage[], options: CompletionOptions): Promise<string> {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    },
    body: JSON.stringify({
      model: options.model,
      messages,
      stream: false,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
    }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const raw = await res.text();
  if (!res.ok) throw new LlmError(`model server answered HTTP ${res.status}: ${raw.slice(0, 300)}`, res.status);
  let body: { choices?: Array<{ message?: { content?: unknown } }> };
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    throw new LlmError(`model server sent no JSON: ${raw.slice(0, 200)}`);
  }
  const content = body.choices?.[0]?.message?.content;
  if (typeof content === 'string') return content;
  // Some servers answer with content parts.
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === 'string' ? part : ((part as { text?: string }).text ?? ''))).join('');
  }
  throw new LlmError('model answer has no choices[0].message.content');
}
