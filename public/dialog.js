// A modal password prompt on <dialog>: stays open and shows the error until `submit` succeeds.
import { h, uniqueId } from './dom.js';

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
    const ok = h('button', { type: 'submit', class: 'btn btn-primary' }, '加入');
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost' }, '取消');
    const titleId = uniqueId('dlg-title');
    const form = h(
      'form',
      { class: 'dialog-body', novalidate: true },
      h('h2', { id: titleId }, title),
      message ? h('p', { class: 'muted' }, message) : null,
      h('div', { class: 'field' }, h('label', { for: inputId }, '房间密码'), input, error),
      h('div', { class: 'form-actions' }, cancel, ok),
    );
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId }, form);
    let done = false;
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
        error.textContent = '请输入密码';
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
