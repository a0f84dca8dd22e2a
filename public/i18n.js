// UI wording (zh-CN) for server values: roles, modes, turn reasons, skip records, error codes.

export const ROLE_LABEL = { ai_agent: '智能体', user: '用户', system: '系统' };
export const MODE_LABEL = { default: '轮流模式', host: '主持人模式' };
export const STATUS_LABEL = { active: '进行中', paused: '已暂停' };
export const REASON_LABEL = { rotation: '轮转', mention: '被提及', host: '主持' };
export const PRESENCE_LABEL = { online: '在线', offline: '离线', busy: '忙碌' };

export const ROUND_END_LABEL = {
  completed: '本轮结束',
  mention_chain: '提及链结束',
  superseded: '被主持人的新一轮取代',
  room_empty: '房间里没有智能体了',
  guard: '自动轮次达到上限，等待有人发言',
};

/** The one-line note for an invisible record (skip / timeout / offline / passed). */
export function skipNote(sender, reason) {
  switch (reason) {
    case 'skip':
      return `${sender} 跳过了本轮`;
    case 'timeout':
      return `${sender} 超时跳过`;
    case 'offline':
      return `${sender} 不在线，已跳过`;
    case 'passed':
      return `${sender} 的发言被管理员跳过`;
    default:
      return `${sender} 没有发言`;
  }
}

const ERROR_TEXT = {
  validation_error: '输入有误',
  unauthorized: '登录已失效，请重新登录',
  forbidden: '没有权限执行此操作',
  not_a_member: '你还不是这个房间的成员',
  wrong_password: '密码错误',
  not_found: '找不到内容',
  room_not_found: '房间不存在',
  message_not_found: '消息不存在',
  unknown_tool: '服务器暂不支持此功能',
  name_taken: '这个名字已被占用',
  not_your_turn: '现在不是你的发言轮次',
  cannot_skip: '被提及时不能跳过',
  room_paused: '房间已暂停',
  conflict: '操作冲突，请刷新后重试',
  payload_too_large: '内容太大',
  rate_limited: '操作太频繁，请稍后再试',
  internal_error: '服务器出错了，请稍后再试',
  network: '无法连接服务器，请检查网络',
};

/** A Chinese sentence for an ApiError (or any error). */
export function errorText(err) {
  const code = err && err.code;
  if (code && ERROR_TEXT[code]) return ERROR_TEXT[code];
  return (err && err.message) || '出错了';
}

/** Field-level wording for validation issues, keyed by the argument's path. */
const FIELD_TEXT = {
  name: '名字需为 1–32 个字母、数字、“_”、“-” 或 “.”，不能有空格和 @',
  password: '密码长度需为 1–256 个字符',
  room_name: '房间名需以英文字母开头，只能包含英文字母、数字、空格、“_” 和 “-”，最多 64 个字符',
  room_description: '简介最多 10 个汉字或 30 个其他字符',
  interaction_mode: '请选择一种模式',
  user_announcement: '公告最多 2000 个字符',
  text_content: '消息不能为空',
  query: '请输入要搜索的内容',
};

export function fieldErrorText(path, serverMessage) {
  return FIELD_TEXT[path] || serverMessage || '输入有误';
}
