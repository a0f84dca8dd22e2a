// @ts-check
// The room settings panel (room admins): description, mode, whether people may post, automatic
// rounds, turn timeout, password, announcement (update_room, set_announcement); pause/resume;
// removing members (remove_member); archiving (archive_room, creator only).
import { ApiError, callTool } from './api.js';
import { confirmDialog, openDialog } from './dialog.js';
import { h, toast } from './dom.js';
import { field, setFieldErrors } from './forms.js';
import { errorText, fieldErrorText, modeLabel, t } from './i18n.js';

/**
 * @param {{ room: any, me: string, isCreator: boolean, onRoom: (room: any) => void }} opts
 */
export function openSettings({ room, me, isCreator, onRoom }) {
  const fDesc = field({ label: t('create.description'), name: 'room_description', maxlength: 60, value: room.room_description || '', hint: t('create.descriptionHint') });
  const fMode = field({
    label: t('create.mode'),
    name: 'interaction_mode',
    as: 'select',
    options: ['default', 'host'].map((m) => ({ value: m, label: modeLabel(m), selected: room.interaction_mode === m })),
  });
  const fUsers = field({ label: t('create.userParticipation'), name: 'user_participation', type: 'checkbox', checked: room.user_participation });
  const fRounds = field({ label: t('settings.maxAutoRounds'), name: 'max_auto_rounds', type: 'number', min: 1, max: 1000, value: String(room.settings?.max_auto_rounds ?? 3), hint: t('settings.maxAutoRoundsHint') });
  const timeoutMs = room.settings?.turn_timeout_ms;
  const fTimeout = field({ label: t('settings.turnTimeout'), name: 'turn_timeout_ms', type: 'number', min: 1, max: 86400, value: typeof timeoutMs === 'number' ? String(Math.round(timeoutMs / 1000)) : '', hint: t('settings.turnTimeoutHint') });
  const fPassword = field({ label: room.has_password ? t('settings.newPassword') : t('create.password'), name: 'password', type: 'password', autocomplete: 'new-password', maxlength: 256, hint: t('settings.passwordHint') });
  const fClearPw = field({ label: t('settings.clearPassword'), name: 'clear_password', type: 'checkbox' });
  fClearPw.row.hidden = !room.has_password;
  const fAnn = field({ label: t('settings.announcement'), name: 'user_announcement', as: 'textarea', rows: '3', maxlength: 2000, value: room.announcement?.user_announcement || '' });
  /** @type {HTMLTextAreaElement} */ (fAnn.input).value = room.announcement?.user_announcement || '';
  const fields = [fDesc, fMode, fUsers, fRounds, fTimeout, fPassword, fAnn];
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', class: 'btn btn-primary', id: 'settings-save' }, t('common.save'));
  const form = h(
    'form',
    { class: 'settings-form', novalidate: true },
    h('div', { class: 'form-grid' }, fDesc.row, fMode.row, fRounds.row, fTimeout.row, fPassword.row),
    fClearPw.row,
    fUsers.row,
    fAnn.row,
    error,
    h('div', { class: 'form-actions' }, save),
  );

  const paused = room.system_status === 'paused';
  const pauseBtn = h('button', { type: 'button', class: 'btn', id: 'settings-pause' }, paused ? t('room.resume') : t('room.pause'));
  const memberList = h('ul', { class: 'settings-members' });
  const drawMembers = (/** @type {any} */ r) => {
    memberList.replaceChildren(
      ...r.members.map((/** @type {any} */ m) => {
        const isMe = m.name.toLowerCase() === me.toLowerCase();
        const btn = isMe ? null : h('button', { type: 'button', class: 'btn btn-small btn-danger', 'aria-label': t('members.remove', { name: m.name }) }, t('settings.remove'));
        btn?.addEventListener('click', async () => {
          if (!(await confirmDialog({ title: t('members.remove', { name: m.name }), message: t('settings.removeConfirm', { name: m.name }), confirm: t('settings.remove'), danger: true }))) return;
          try {
            const data = await callTool('remove_member', { room_id: r.room_id, name: m.name });
            onRoom(data.room);
            drawMembers(data.room);
          } catch (err) {
            toast(errorText(err), 'error');
          }
        });
        return h('li', { dataset: { name: m.name } }, h('span', {}, m.name), h('span', { class: 'muted' }, m.role === 'ai_agent' ? t('role.ai_agent') : t('role.user')), btn);
      }),
    );
  };
  drawMembers(room);
  const archiveBtn = isCreator && !room.archived ? h('button', { type: 'button', class: 'btn btn-danger', id: 'settings-archive' }, t('settings.archive')) : null;

  const dlg = openDialog({
    title: t('settings.title'),
    className: 'dialog-wide settings-dialog',
    body: [
      form,
      h('section', { class: 'settings-section' }, h('h3', {}, t('settings.statusTitle')), h('p', { class: 'muted' }, t('settings.statusHelp')), pauseBtn),
      h('section', { class: 'settings-section' }, h('h3', {}, t('settings.membersTitle')), memberList),
      archiveBtn ? h('section', { class: 'settings-section' }, h('h3', {}, t('settings.archiveTitle')), h('p', { class: 'muted' }, t('settings.archiveHelp')), archiveBtn) : null,
    ],
  });

  pauseBtn.addEventListener('click', async () => {
    try {
      const data = await callTool('set_room_status', { room_id: room.room_id, system_status: room.system_status === 'paused' ? 'active' : 'paused' });
      room = data.room;
      onRoom(room);
      pauseBtn.textContent = room.system_status === 'paused' ? t('room.resume') : t('room.pause');
    } catch (err) {
      toast(errorText(err), 'error');
    }
  });
  archiveBtn?.addEventListener('click', async () => {
    if (!(await confirmDialog({ title: t('settings.archiveTitle'), message: t('settings.archiveConfirm'), confirm: t('settings.archive'), danger: true }))) return;
    try {
      const data = await callTool('archive_room', { room_id: room.room_id });
      onRoom(data.room);
      dlg.close();
    } catch (err) {
      toast(errorText(err), 'error');
    }
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    setFieldErrors(fields, {});
    /** @type {Record<string, any>} */
    const changes = {};
    const desc = /** @type {HTMLInputElement} */ (fDesc.input).value.trim();
    if (desc !== (room.room_description || '')) changes.room_description = desc;
    const mode = /** @type {HTMLSelectElement} */ (fMode.input).value;
    if (mode !== room.interaction_mode) changes.interaction_mode = mode;
    const users = /** @type {HTMLInputElement} */ (fUsers.input).checked;
    if (users !== room.user_participation) changes.user_participation = users;
    const rounds = Number(/** @type {HTMLInputElement} */ (fRounds.input).value);
    if (!Number.isInteger(rounds) || rounds < 1 || rounds > 1000) return void setFieldErrors(fields, { max_auto_rounds: t('settings.maxAutoRoundsHint') });
    if (rounds !== (room.settings?.max_auto_rounds ?? 3)) changes.max_auto_rounds = rounds;
    const secText = /** @type {HTMLInputElement} */ (fTimeout.input).value.trim();
    const timeout = secText === '' ? null : Math.round(Number(secText) * 1000);
    if (timeout !== null && (!Number.isFinite(timeout) || timeout < 1000 || timeout > 86_400_000)) return void setFieldErrors(fields, { turn_timeout_ms: t('settings.turnTimeoutHint') });
    if (timeout !== (room.settings?.turn_timeout_ms ?? null)) changes.turn_timeout_ms = timeout;
    const pw = /** @type {HTMLInputElement} */ (fPassword.input).value;
    if (/** @type {HTMLInputElement} */ (fClearPw.input).checked) changes.password = null;
    else if (pw) changes.password = pw;
    const ann = /** @type {HTMLTextAreaElement} */ (fAnn.input).value;
    const annChanged = ann !== (room.announcement?.user_announcement || '');
    save.disabled = true;
    try {
      if (Object.keys(changes).length > 0) {
        room = (await callTool('update_room', { room_id: room.room_id, ...changes })).room;
        onRoom(room);
      }
      if (annChanged) {
        room = (await callTool('set_announcement', { room_id: room.room_id, user_announcement: ann })).room;
        onRoom(room);
      }
      toast(t('settings.saved'));
      dlg.close();
    } catch (err) {
      if (err instanceof ApiError && err.code === 'validation_error') {
        /** @type {Record<string, string>} */
        const mapped = {};
        for (const [path, msg] of Object.entries(err.fieldIssues())) mapped[path] = fieldErrorText(path, msg);
        if (setFieldErrors(fields, mapped)) return;
      }
      error.textContent = errorText(err);
      error.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  return dlg;
}
