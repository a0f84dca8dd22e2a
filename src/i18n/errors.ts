// Error messages in the caller's language (SPEC §7): `code` never changes, `message` is written
// for a person. The server throws its errors with an English message; this module holds the
// Chinese of each (written, not machine-translated), and a sentence per code in both languages
// for anything not listed. Localisation happens once, where a call's error is answered
// (tools/registry.ts for tool calls, transports/http.ts for the rest of REST).
import { AppError, ERROR_STATUS, toWireError, type ErrorCode, type WireError } from '../errors.js';
import type { Lang, Localized } from './language.js';

/** One sentence per code, for an error whose own message is not in MESSAGES. */
export const ERROR_TEXTS: Record<ErrorCode, Localized> = {
  validation_error: { 'zh-CN': '参数无效或缺失。', en: 'Invalid or missing arguments.' },
  unauthorized: { 'zh-CN': '缺少令牌，或令牌无效。', en: 'No token, or the token is not valid.' },
  forbidden: { 'zh-CN': '你没有权限执行此操作。', en: 'You are not allowed to do this.' },
  not_a_member: { 'zh-CN': '你不是这个房间的成员。', en: 'You are not a member of this room.' },
  wrong_password: { 'zh-CN': '密码错误。', en: 'Wrong password.' },
  not_found: { 'zh-CN': '找不到请求的内容。', en: 'Not found.' },
  room_not_found: { 'zh-CN': '找不到这个房间。', en: 'No room with this id.' },
  message_not_found: { 'zh-CN': '找不到这条消息。', en: 'No message with this id.' },
  unknown_tool: { 'zh-CN': '没有这个工具。', en: 'No tool with this name.' },
  name_taken: { 'zh-CN': '这个名字已被占用。', en: 'This name is taken.' },
  not_your_turn: { 'zh-CN': '现在不是你的发言轮次。', en: 'It is not your turn.' },
  cannot_skip: { 'zh-CN': '这一轮不能跳过（你被点名了），请用 send_message 回答。', en: 'This turn cannot be skipped (you were mentioned); answer with send_message.' },
  room_paused: { 'zh-CN': '房间已暂停。', en: 'The room is paused.' },
  conflict: { 'zh-CN': '操作与当前状态冲突。', en: 'This conflicts with the current state.' },
  room_full: { 'zh-CN': '房间已满（最多 200 名成员）。', en: 'The room is full (at most 200 members).' },
  payload_too_large: { 'zh-CN': '内容太大。', en: 'Too large.' },
  rate_limited: { 'zh-CN': '请求过于频繁，请稍后再试。', en: 'Too many requests; slow down.' },
  internal_error: { 'zh-CN': '服务器内部错误。', en: 'Internal server error.' },
};

/**
 * The messages the server throws, as written in English (`{x}` stands for a variable part), and
 * their Chinese. A variable part is carried over as it is (a name, a number, a path).
 */
const MESSAGES: ReadonlyArray<readonly [string, string]> = [
  // identity and tokens
  ['Unknown or revoked token', '令牌未知或已被撤销'],
  ['Unknown token', '未知的令牌'],
  ['not authenticated', '尚未认证'],
  ['This tool needs a token (Authorization: Bearer <token>)', '这个工具需要令牌（Authorization: Bearer <token>）'],
  ['This needs a token (Authorization: Bearer <token>)', '需要令牌（Authorization: Bearer <token>）'],
  ['The token in the Authorization header is unknown or was rotated', 'Authorization 头中的令牌未知或已被更换'],
  ['Give either token, or name and password', '请提供 token，或者名字和密码'],
  ['Name or password is wrong', '名字或密码错误'],
  ['Participant not found', '找不到这个参与者'],
  ['The name "{name}" is taken', '名字“{name}”已被占用'],
  ['The name "{name}" looks like the existing name "{other}"', '名字“{name}”与已有的名字“{other}”看起来相同'],
  ['The name "{name}" looks like a name being registered', '名字“{name}”与一个正在注册的名字看起来相同'],
  ['name must be 1–32 letters, digits, "_", "-" or "." (no spaces, no "@")', '名字须为 1–32 个字母、数字、“_”、“-”或“.”（不能有空格和“@”）'],
  ['name must not contain invisible characters (joiners, fillers, variation selectors)', '名字不能包含不可见字符（连接符、填充符、变体选择符）'],
  ['name must not start with a combining mark or put one on "_", "-" or "."', '名字不能以组合符号开头，也不能把组合符号放在“_”、“-”或“.”上'],
  // MCP sessions
  [
    'This MCP session has no identity yet: call register_agent (new agent) or login {token} first, or configure the header "Authorization: Bearer <token>".',
    '这个 MCP 会话还没有身份：请先调用 register_agent（新智能体）或 login {token}，或者配置请求头“Authorization: Bearer <token>”。',
  ],
  ['This MCP session is bound to "{name}" and cannot act as "{other}"; open a new session for another participant.', '这个 MCP 会话已绑定到“{name}”，不能以“{other}”的身份操作；请为其他参与者打开新的会话。'],
  [
    'The token this session was bound with (as "{name}") was rotated or revoked; call login with the current token, or open a new session.',
    '这个会话绑定时使用的令牌（身份“{name}”）已被更换或撤销；请用当前令牌调用 login，或打开新的会话。',
  ],
  ['This MCP session is already bound to "{name}"; open a new session to register another agent.', '这个 MCP 会话已绑定到“{name}”；要注册另一个智能体，请打开新的会话。'],
  ['This MCP session is already bound to "{name}"; open a new session to register someone else.', '这个 MCP 会话已绑定到“{name}”；要注册其他人，请打开新的会话。'],
  ['This MCP session is already bound to "{name}"; open a new session to {what}.', '这个 MCP 会话已绑定到“{name}”；请打开新的会话。'],
  ['This MCP session is bound to "{name}" and cannot log in as "{other}"; open a new session for another participant.', '这个 MCP 会话已绑定到“{name}”，不能以“{other}”的身份登录；请为其他参与者打开新的会话。'],
  ['This MCP session is being identified by another call; try again.', '这个 MCP 会话正在被另一个调用确认身份，请重试。'],
  // rooms and permissions
  ['Room {room} not found', '找不到房间 {room}'],
  ['No room with this id', '找不到这个 ID 的房间'],
  ['You are not a member of this room', '你不是这个房间的成员'],
  ['Only the room creator or host may do this', '只有房间创建者或主持人可以这样做'],
  ['This room is archived and read-only', '这个房间已归档，只能查看'],
  ['Only people and room admins may do this', '只有用户和房间管理员可以这样做'],
  ['Only the room creator may archive it', '只有房间创建者可以归档房间'],
  ['{name} is not a member of this room', '{name} 不是这个房间的成员'],
  ['This room needs a password', '这个房间需要密码'],
  ['Wrong room password', '房间密码错误'],
  ['A room holds at most {n} members', '一个房间最多容纳 {n} 名成员'],
  ['Only agents report an activity', '只有智能体可以报告活动状态'],
  // turns
  ['It is not your turn', '现在不是你的发言轮次'],
  ['The room is paused', '房间已暂停'],
  ['This turn cannot be skipped (you were mentioned)', '这一轮不能跳过（你被点名了），请用 send_message 回答'],
  ['A round is already running', '已有一轮正在进行'],
  ['In host mode start_round gives the floor to an agent host; this host is a person', '主持人模式下 start_round 只把发言权交给智能体主持人；这个房间的主持人是用户'],
  ['Nobody holds a turn', '当前没有人在发言轮次中'],
  ['The loop guard has tripped: only a person can start the next round', '已达到自动轮次上限：只有用户可以开始下一轮'],
  ['The room has no agents', '这个房间没有智能体'],
  ['extend_turn may be used at most {n} times per turn', '每个轮次最多只能调用 {n} 次 extend_turn'],
  // messages
  ['text_content is longer than {n} characters', 'text_content 超过了 {n} 个字符'],
  ['text_content is empty', 'text_content 为空'],
  ['mentions names no member of this room: {names}', 'mentions 中有不是本房间成员的名字：{names}'],
  ['People may not post in this room (user participation is off)', '这个房间不允许用户发言（已关闭用户参与）'],
  ['response_to names no message of this room', 'response_to 指向的不是本房间的消息'],
  ['Message not found', '找不到这条消息'],
  ['No message with this id', '找不到这个 ID 的消息'],
  ["The engine's records cannot be edited", '引擎写入的记录不能编辑'],
  ["The engine's records cannot be deleted", '引擎写入的记录不能删除'],
  ['Only the sender may edit a message', '只有发送者可以编辑消息'],
  ['This message cannot be edited', '这条消息不能编辑'],
  ['Only the sender or a room admin may delete a message', '只有发送者或房间管理员可以删除消息'],
  [
    'file_url must be an upload of this room (as the upload endpoint returned it) or an absolute http(s) URL',
    'file_url 必须是本房间的上传文件（上传接口返回的路径），或者一个完整的 http(s) 网址',
  ],
  // tools, requests and frames
  ['No tool named "{name}"', '没有名为“{name}”的工具'],
  ['Malformed JSON body', '请求体不是有效的 JSON'],
  ['Request body is too large', '请求体太大'],
  ['No such endpoint', '没有这个接口'],
  ['Not found', '找不到'],
  ['Frame is not valid JSON', '帧不是有效的 JSON'],
  ['Frame must be a JSON object with a "type"', '帧必须是带有“type”字段的 JSON 对象'],
  ['Unknown frame type {type}', '未知的帧类型 {type}'],
  ['Already authenticated', '已经认证过了'],
  ['Invalid arguments', '参数无效'],
  ['The server is shutting down', '服务器正在关闭'],
  ['Internal server error', '服务器内部错误'],
  ['Storage is not answering', '存储没有响应'],
  // uploads, files and exports
  ['Send multipart/form-data with a field named "file"', '请用 multipart/form-data 发送，并包含名为“file”的字段'],
  ['No field named "file" in the upload', '上传内容中没有名为“file”的字段'],
  ['Malformed multipart body', 'multipart 请求体格式错误'],
  ['Malformed or incomplete multipart body', 'multipart 请求体格式错误或不完整'],
  ['The file is larger than {n} bytes', '文件超过了 {n} 字节'],
  ['Too many uploads of this name at once; try again', '同名文件同时上传过多，请重试'],
  ['No such file', '没有这个文件'],
  ['No such export', '没有这个导出文件'],
  ['No such export (exports are kept for an hour)', '没有这个导出文件（导出文件保留一小时）'],
  ['This link has expired or is not valid', '这个链接已过期或无效'],
  ['The server is busy with other exports ({running} running, {waiting} waiting); try again shortly', '服务器正忙于其他导出（{running} 个进行中，{waiting} 个等待中），请稍后再试'],
  ['The server is busy with other {what} ({running} running, {waiting} waiting); try again shortly', '服务器正忙于其他任务（{running} 个进行中，{waiting} 个等待中），请稍后再试'],
  ['Imported messages belong to no one here and cannot be edited', '导入的消息不属于这里的任何人，不能编辑'],
  ['Imported messages belong to no one here and cannot be deleted', '导入的消息不属于这里的任何人，不能删除'],
  ['Host "{host}" is not allowed. Add it to ALLOWED_HOSTS (now: {allowed}) to accept it.', '不允许的 Host“{host}”。要接受它，请把它加入 ALLOWED_HOSTS（当前：{allowed}）。'],
  // MCP (resources, identity without a session)
  ['Following a room needs a token (Authorization: Bearer <token>)', '关注房间需要令牌（Authorization: Bearer <token>）'],
  ['Reading a room needs a token (Authorization: Bearer <token>)', '读取房间需要令牌（Authorization: Bearer <token>）'],
  ['Only chatroom://rooms/… resources can be followed', '只能关注 chatroom://rooms/… 资源'],
  ['Only chatroom://rooms/… resources can be subscribed', '只能订阅 chatroom://rooms/… 资源'],
  ['No resource "{uri}": rooms are {a}{room_id} and {b}{room_id}/messages', '没有资源“{uri}”：房间资源是 {a}{room_id} 和 {b}{room_id}/messages'],
  ['The token argument is unknown or was rotated', 'token 参数未知或已被轮换'],
  [
    'No identity: send the header "Authorization: Bearer <token>", pass your token as the "token" argument, or (with an MCP session) call register_agent or login {token} first.',
    '没有身份：请发送请求头“Authorization: Bearer <token>”，或把令牌作为“token”参数传入，或（在 MCP 会话中）先调用 register_agent 或 login {token}。',
  ],
  ['At most {n} resource subscriptions per session', '每个会话最多订阅 {n} 个资源'],
  // imports
  ['data must be a JSON object: a room export (format "agent-chatroom.room")', 'data 必须是一个 JSON 对象：房间导出文件（format 为“agent-chatroom.room”）'],
  ['data.format must be "{format}"', 'data.format 必须是“{format}”'],
  ['data.version {version} is not supported (this server reads version {supported})', '不支持 data.version {version}（本服务器读取的版本是 {supported}）'],
  ['data.messages: seq {seq} does not follow seq {last} (messages must be in seq order)', 'data.messages：seq {seq} 没有接在 seq {last} 之后（消息必须按 seq 顺序排列）'],
  ['data.messages: message_id {id} appears twice', 'data.messages：message_id {id} 出现了两次'],
  ['data.members: {name} appears twice', 'data.members：{name} 出现了两次'],
  ['The import is nested too deeply at {path}', '导入内容在 {path} 处嵌套过深'],
  ['Not a plain JSON object at {path}', '{path} 处不是普通的 JSON 对象'],
  ['Key "{key}" is not allowed (at {path})', '不允许使用键“{key}”（位于 {path}）'],
  ['The import is larger than any room export', '导入内容比任何房间导出文件都大'],
  ['The messages hold more than {n} characters', '消息总共超过了 {n} 个字符'],
  // rate limits
  ['Too many requests; slow down', '请求过于频繁，请放慢速度'],
  ['Too many registrations from this address; try again later', '这个地址的注册次数过多，请稍后再试'],
  ['Too many login attempts from this address; try again later', '这个地址的登录尝试过多，请稍后再试'],
  ['Too many new MCP sessions from this address; try again later', '这个地址新建的 MCP 会话过多，请稍后再试'],
  ['Too many room passwords set; try again in a minute', '设置房间密码的次数过多，请一分钟后再试'],
  ['Another attempt with this password is still pending; try again later', '使用这个密码的另一次尝试仍在进行，请稍后再试'],
  ['Too many open connections from this address; close some and try again', '这个地址打开的连接过多，请关闭一些后重试'],
];

/**
 * Reasons written into argument schemas (`refine`, `regex`): they stay English in zod's own
 * messages, so they are translated here; zod's built-in messages come from its zh-CN locale.
 */
const REASONS: ReadonlyArray<readonly [string, string]> = [
  ['must be 1–32 letters, digits, "_", "-" or "." (no spaces, no "@")', '须为 1–32 个字母、数字、“_”、“-”或“.”（不能有空格和“@”）'],
  ['must start with an English letter and use only English letters, digits, space, "_" and "-" (at most 64)', '须以英文字母开头，只能使用英文字母、数字、空格、“_”和“-”（最多 64 个）'],
  ['at most 10 CJK characters or 30 other characters', '最多 10 个中日韩文字或 30 个其他字符'],
  ['unknown time zone', '未知的时区'],
  ['not a language tag like zh-CN', '不是 zh-CN 这样的语言标签'],
  ['at most {n} characters', '最多 {n} 个字符'],
  ['not a valid participant name (SPEC §3)', '不是有效的参与者名字（SPEC §3）'],
  ['not a valid time', '不是有效的时间'],
  ['a system message is sent by "system" and only by it', '系统消息只能由“system”发送'],
  ['an invisible message is a skip record and carries its skip_reason', '不可见的消息是跳过记录，必须带有 skip_reason'],
  ['invalid', '无效'],
];

interface Compiled {
  pattern: RegExp;
  names: string[];
  zh: string;
}

function compile(table: ReadonlyArray<readonly [string, string]>): Compiled[] {
  return table.map(([en, zh]) => {
    const names: string[] = [];
    const source = en
      .split(/(\{[a-z]+\})/)
      .map((part) => {
        const slot = /^\{([a-z]+)\}$/.exec(part);
        if (!slot) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        names.push(slot[1]!);
        return '(.+?)';
      })
      .join('');
    return { pattern: new RegExp(`^${source}$`, 's'), names, zh };
  });
}

const COMPILED_MESSAGES = compile(MESSAGES);
const COMPILED_REASONS = compile(REASONS);

function translate(table: readonly Compiled[], english: string): string | null {
  for (const entry of table) {
    const found = entry.pattern.exec(english);
    if (!found) continue;
    return entry.zh.replace(/\{([a-z]+)\}/g, (slot, name: string) => {
      const at = entry.names.indexOf(name);
      return at >= 0 ? found[at + 1]! : slot;
    });
  }
  return null;
}

/** The Chinese of an English message the server throws, or null when it is not listed. */
export function chineseOf(english: string): string | null {
  return translate(COMPILED_MESSAGES, english) ?? validationChinese(english);
}

/** A reason written into a schema, in Chinese (null when not listed). */
export function chineseReason(english: string): string | null {
  return translate(COMPILED_REASONS, english);
}

/** `path: reason` (schema and import errors): the path kept, the reason translated. */
function validationChinese(english: string): string | null {
  const split = /^([A-Za-z0-9_.[\]]+): (.+)$/s.exec(english);
  if (!split) return null;
  const reason = chineseReason(split[2]!) ?? translate(COMPILED_MESSAGES, split[2]!);
  return reason === null ? null : `${split[1]}：${reason}`;
}

/** The message of `err` in `lang`: its own text in English, the listed Chinese, else the code's sentence. */
export function errorMessage(err: AppError, lang: Lang): string {
  const own = err.texts?.[lang];
  if (own !== undefined) return own;
  if (lang === 'en') return err.message;
  return chineseOf(err.message) ?? ERROR_TEXTS[err.code]['zh-CN'];
}

/** The same error (code, details) with its message in `lang`; anything else passes through. */
export function localizeError(err: unknown, lang: Lang): unknown {
  if (!(err instanceof AppError) || err.localized) return err;
  const localized = new AppError(err.code, errorMessage(err, lang), err.details);
  // A layer further out (the transport) keeps what the registry chose.
  localized.localized = true;
  return localized;
}

/** Every error code (the test walks them in both languages). */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/**
 * The wire form of any thrown error in `lang` (an unknown error is `internal_error` with no
 * detail, as `toWireError` says, in the caller's language too).
 */
export function wireErrorIn(err: unknown, lang: Lang): WireError {
  const wire = toWireError(localizeError(err, lang));
  if (!(err instanceof AppError)) wire.message = ERROR_TEXTS.internal_error[lang];
  return wire;
}
