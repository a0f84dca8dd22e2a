// @ts-check
// Modal dialogs on <dialog>: a generic one (title, body, closes on Escape and gives focus back
// to the opener), a confirmation, and the room password prompt that stays open and shows the
// error until `submit` succeeds.
import { h, uniqueId } from './dom.js';
import { t } from './i18n.js';
import { icon } from './icons.js';

/**
 * @param {{ title: string, className?: string, body: (Node|null)[], onClose?: () => void }} opts
 * @returns {{ dialog: HTMLDialogElement, close: () => void }}
 */
export function openDialog({ title, className = '', body, onClose }) {
  const opener = document.activeElement;
  const titleId = uniqueId('dlg-title');
  const closeBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small btn-icon dialog-close', 'aria-label': t('common.close') }, icon('x', { size: 16 }));
  const dialog = h(
    'dialog',
    { class: `dialog ${className}`, 'aria-labelledby': titleId },
    h('div', { class: 'dialog-body' }, h('div', { class: 'dialog-head' }, h('h2', { id: titleId }, title), closeBtn), ...body),
  );
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    if (dialog.open) dialog.close();
    dialog.remove();
    if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    onClose?.();
  };
  closeBtn.addEventListener('click', close);
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    close();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, close };
}

/**
 * A yes/no question. @param {{ title: string, message: string, confirm: string, danger?: boolean }} opts
 * @returns {Promise<boolean>}
 */
export function confirmDialog({ title, message, confirm, danger = false }) {
  return new Promise((resolve) => {
    let answer = false;
    const ok = h('button', { type: 'button', class: `btn ${danger ? 'btn-danger-solid' : 'btn-primary'} dialog-confirm` }, confirm);
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, t('common.cancel'));
    const { close } = openDialog({
      title,
      className: 'dialog-confirm-box',
      body: [h('p', {}, message), h('div', { class: 'form-actions' }, cancel, ok)],
      onClose: () => resolve(answer),
    });
    ok.addEventListener('click', () => {
      answer = true;
      close();
    });
    cancel.addEventListener('click', close);
    ok.focus();
  });
}

/**
 * @param {object} opts
 * @param {string} opts.title
 * @param {string} [opts.message]
 * @param {(password: string) => Promise<string|null>} opts.submit  resolves null on success, or an error text
 * @returns {Promise<boolean>} true when submit succeeded, false when cancelled
 */
export function askPassword({ title, message, submit }) {
  return new Promise((resolve) => {
    // Keyboard users get their place back when the dialog closes (the button that opened it).
    const opener = document.activeElement;
    const inputId = uniqueId('pw');
    const errorId = `${inputId}-error`;
    const input = h('input', { id: inputId, type: 'password', name: 'password', autocomplete: 'off', required: true, maxlength: 256, 'aria-describedby': errorId });
    const error = h('p', { class: 'field-error', id: errorId, role: 'alert', hidden: true });
    const ok = h('button', { type: 'submit', class: 'btn btn-primary' }, t('password.join'));
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, t('common.cancel'));
    const titleId = uniqueId('dlg-title');
    const form = h(
      'form',
      { class: 'dialog-body', novalidate: true },
      h('h2', { id: titleId }, title),
      message ? h('p', { class: 'muted' }, message) : null,
      h('div', { class: 'field' }, h('label', { for: inputId }, t('password.label')), input, error),
      h('div', { class: 'form-actions' }, cancel, ok),
    );
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId }, form);
    let done = false;
    /** @param {boolean} value */
    const finish = (value) => {
      if (done) return;
      done = true;
      if (dialog.open) dialog.close();
      dialog.remove();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(value);
    };
    cancel.addEventListener('click', () => finish(false));
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault();
      finish(false);
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (!input.value) {
        error.textContent = t('password.required');
        error.hidden = false;
        input.focus();
        return;
      }
      ok.disabled = true;
      const problem = await submit(input.value);
      ok.disabled = false;
      if (problem) {
        error.textContent = problem;
        error.hidden = false;
        input.setAttribute('aria-invalid', 'true');
        input.select();
        return;
      }
      finish(true);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
