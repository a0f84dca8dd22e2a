// register_agent, register_user, login, rotate_token.
import { z } from 'zod';
import { describer } from '../i18n/tool-text.js';
import type { ToolServices as App } from './services.js';
import { AppError } from '../errors.js';
import type { Caller } from '../types.js';
import { toPublicAgent, toPublicUser } from '../identity/participant-records.js';
import { defineTool } from './registry.js';
import { chars, language, participantName, password, timezone } from '../protocol/schemas.js';

/** Profile fields stay small (SPEC §10): registration needs no token, so its size is what an outsider can store. */
const introduce = chars(500);
const profileList = z.array(chars(50)).max(20);

export function identityTools(app: App) {
  const say = describer(app.config.defaultLanguage);
  /** A registration: needs no token, so it is limited per client address. */
  const registration = <S extends z.ZodType>(name: string, description: string, input: S, register: (args: z.infer<S>, at: Date) => Promise<unknown>) =>
    defineTool({
      name,
      public: true,
      description,
      input,
      // Counted before the arguments are checked: a refused registration counts (SPEC §10).
      admit: (ctx) => app.limits.consumeRegistration(ctx.address ?? null),
      handler: (args) => register(args, new Date(app.now())),
    });

  return [
    registration(
      'register_agent',
      say({
        'zh-CN': '注册一个新的 AI 智能体，获得它的秘密令牌（只显示一次）。以 "Authorization: Bearer <token>" 使用令牌。通过 MCP 注册时，会话绑定到这个新智能体。',
        en: 'Register a new AI agent and get its secret token (shown once). Use the token as "Authorization: Bearer <token>". Over MCP the session is bound to the new agent.',
      }),
      z
        .object({
          name: participantName,
          introduce: introduce.optional(),
          capabilities: profileList.optional(),
          skip_list: profileList.optional(),
          language_support: profileList.optional(),
          preferred_language: language.optional(),
          timezone: timezone.optional(),
        })
        .strict(),
      (args, at) => app.participants.registerAgent(args, at),
    ),
    registration(
      'register_user',
      say({
        'zh-CN': '注册一个用户（用于网页），获得秘密令牌。设置了密码的用户可以在别处再次登录。',
        en: 'Register a person (for the web page) and get a secret token. With a password, the person can log in again elsewhere.',
      }),
      z.object({ name: participantName, password: password.optional(), language: language.optional(), timezone: timezone.optional() }).strict(),
      (args, at) => app.participants.registerUser(args, at),
    ),
    defineTool({
      name: 'login',
      public: true,
      description: say({
        'zh-CN': '用已有的令牌登录（检查令牌；绑定 MCP 会话），或者以用户身份用名字和密码登录（返回新令牌）。',
        en: 'Log in with an existing token (checks it; binds an MCP session), or as a person with name and password (returns a new token).',
      }),
      input: z
        .object({ token: z.string().min(1).max(200).optional(), name: z.string().max(64).optional(), password: password.optional() })
        .strict(),
      handler: async (args, ctx) => {
        if (args.token === undefined && (args.name === undefined || args.password === undefined)) {
          throw new AppError('validation_error', 'Give either token, or name and password');
        }
        if (args.token === undefined) await app.limits.consumeLogin(ctx.address ?? null);
        const { participant, token } = await app.participants.login(args, ctx.address ?? null);
        const { tokenHash: _tokenHash, ...who } = participant;
        // The whole public record (SPEC §4, as registration returned it), with what is derived
        // rather than kept on it: the rooms (from the rooms' members) and the presence status.
        const [stored, rooms] = await Promise.all([app.participants.get(participant), app.store.roomsOf(participant.id)]);
        const profile = stored ? (stored.kind === 'agent' ? toPublicAgent(stored.record) : toPublicUser(stored.record)) : {};
        const status = app.presence.isOnline(participant.id) ? ((await busyInSomeRoom(app, participant, rooms)) ? 'busy' : 'online') : 'offline';
        // The id also under the name registration returned it (`agent_id` / `user_id`).
        const idField = participant.kind === 'agent' ? 'agent_id' : 'user_id';
        return { participant: { ...profile, ...who, [idField]: participant.id, rooms, status }, token };
      },
    }),
    defineTool({
      name: 'rotate_token',
      description: say({ 'zh-CN': '把调用者的令牌换成新的；旧令牌立即失效。', en: "Replace the caller's token with a new one; the old token stops working at once." }),
      input: z.object({}).strict(),
      handler: async (_args, ctx) => ({ token: await app.participants.rotateToken(ctx.caller) }),
    }),
  ];
}

/**
 * An agent is `busy` while it has reported an activity (SPEC §4, `set_activity`); the activity
 * lives on its member entry in the room it was reported in, so this reads the caller's rooms.
 */
async function busyInSomeRoom(app: App, participant: Pick<Caller, 'id' | 'kind'>, rooms: readonly string[]): Promise<boolean> {
  if (participant.kind !== 'agent') return false;
  for (const roomId of rooms) {
    const room = await app.reads.memberRoom(roomId, participant).catch(() => null);
    if (room?.members.some((m) => m.participant_id === participant.id && m.status === 'busy')) return true;
  }
  return false;
}
