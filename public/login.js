// @ts-check
// Sign-in view: pick a name (register_user, optional password) or log in with name + password.
import { ApiError, callTool } from './api.js';
import { h } from './dom.js';
import { errorText, fieldErrorText, t } from './i18n.js';
import { field, setFieldErrors } from './forms.js';

/**
 * @param {HTMLElement} container
 * @param {(token: string, participant: object) => void} onSignedIn
 * @param {{ notice?: string }} [opts] `notice`: why the person must sign in again (shown above the forms)
 */
export function mountLogin(container, onSignedIn, { notice = '' } = {}) {
  const regName = field({ label: t('login.name'), name: 'name', autocomplete: 'username', required: true, maxlength: 32, hint: t('login.nameHint') });
  const regPassword = field({ label: t('login.passwordOptional'), name: 'password', type: 'password', autocomplete: 'new-password', maxlength: 256, hint: t('login.passwordHint') });
  const regError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const regButton = h('button', { type: 'submit', class: 'btn btn-primary' }, t('login.enter'));
  const regForm = h(
    'form',
    { class: 'card login-card', 'aria-labelledby': 'reg-title', novalidate: true },
    h('h2', { id: 'reg-title' }, t('login.pickName')),
    h('p', { class: 'muted' }, t('login.pickNameHelp')),
    regName.row,
    regPassword.row,
    regError,
    h('div', { class: 'form-actions' }, regButton),
  );

  const loginName = field({ label: t('login.name'), name: 'name', autocomplete: 'username', required: true, maxlength: 64 });
  const loginPassword = field({ label: t('login.password'), name: 'password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 256 });
  const loginError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const loginButton = h('button', { type: 'submit', class: 'btn' }, t('login.login'));
  const loginForm = h(
    'form',
    { class: 'card login-card', 'aria-labelledby': 'login-title', novalidate: true },
    h('h2', { id: 'login-title' }, t('login.loginTitle')),
    h('p', { class: 'muted' }, t('login.loginHelp')),
    loginName.row,
    loginPassword.row,
    loginError,
    h('div', { class: 'form-actions' }, loginButton),
  );

  const showError = (el, text) => {
    el.textContent = text;
    el.hidden = !text;
  };

  regForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(regError, '');
    setFieldErrors([regName, regPassword], {});
    const name = regName.input.value.trim();
    const password = regPassword.input.value;
    if (!name) {
      setFieldErrors([regName], { name: t('login.nameRequired') });
      regName.input.focus();
      return;
    }
    regButton.disabled = true;
    try {
      const data = await callTool('register_user', { name, ...(password ? { password } : {}) }, { token: null });
      onSignedIn(data.token, { kind: 'user', id: data.user_id, name: data.user?.name ?? name, role: 'user' });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'name_taken') {
        setFieldErrors([regName], { name: t('login.taken', { name }) });
        regName.input.focus();
      } else if (err instanceof ApiError && err.code === 'validation_error') {
        const issues = err.fieldIssues();
        const mapped = {};
        for (const [path, msg] of Object.entries(issues)) mapped[path] = fieldErrorText(path, msg);
        if (!setFieldErrors([regName, regPassword], mapped)) showError(regError, fieldErrorText('', err.message));
      } else {
        showError(regError, errorText(err));
      }
    } finally {
      regButton.disabled = false;
    }
  });

  loginForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(loginError, '');
    setFieldErrors([loginName, loginPassword], {});
    const name = loginName.input.value.trim();
    const password = loginPassword.input.value;
    const missing = {};
    if (!name) missing.name = t('login.nameRequired');
    if (!password) missing.password = t('password.required');
    if (setFieldErrors([loginName, loginPassword], missing)) return;
    loginButton.disabled = true;
    try {
      const data = await callTool('login', { name, password }, { token: null });
      onSignedIn(data.token, data.participant);
    } catch (err) {
      if (err instanceof ApiError && (err.code === 'wrong_password' || err.code === 'not_found' || err.code === 'unauthorized')) {
        showError(loginError, t('login.wrong'));
      } else {
        showError(loginError, errorText(err));
      }
    } finally {
      loginButton.disabled = false;
    }
  });

  const view = h(
    'section',
    { class: 'view view-login', 'aria-labelledby': 'login-heading' },
    h('h1', { id: 'login-heading', class: 'page-title' }, t('login.welcome')),
    h('p', { class: 'lead' }, t('login.lead')),
    notice ? h('p', { class: 'login-notice', role: 'alert' }, notice) : null,
    h('div', { class: 'login-grid' }, regForm, h('div', { class: 'login-or', 'aria-hidden': 'true' }, t('login.or')), loginForm),
  );
  container.append(view);
  regName.input.focus();
  return { destroy() {} };
}
