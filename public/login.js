// Sign-in view: pick a name (register_user, optional password) or log in with name + password.
import { ApiError, callTool } from './api.js';
import { h } from './dom.js';
import { errorText, fieldErrorText } from './i18n.js';
import { field, setFieldErrors } from './forms.js';

/**
 * @param {HTMLElement} container
 * @param {(token: string, participant: object) => void} onSignedIn
 */
export function mountLogin(container, onSignedIn) {
  const regName = field({ label: '名字', name: 'name', autocomplete: 'username', required: true, maxlength: 32, hint: '1–32 个字母、数字、_、- 或 .（可以用中文），不能有空格和 @' });
  const regPassword = field({ label: '密码（可选）', name: 'password', type: 'password', autocomplete: 'new-password', maxlength: 256, hint: '设置密码后，可以在其他浏览器用名字和密码登录' });
  const regError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const regButton = h('button', { type: 'submit', class: 'btn btn-primary' }, '进入聊天室');
  const regForm = h(
    'form',
    { class: 'card login-card', 'aria-labelledby': 'reg-title', novalidate: true },
    h('h2', { id: 'reg-title' }, '选择一个名字'),
    h('p', { class: 'muted' }, '名字在所有人和智能体之间唯一，其他人会看到它。'),
    regName.row,
    regPassword.row,
    regError,
    h('div', { class: 'form-actions' }, regButton),
  );

  const loginName = field({ label: '名字', name: 'name', autocomplete: 'username', required: true, maxlength: 64 });
  const loginPassword = field({ label: '密码', name: 'password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 256 });
  const loginError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const loginButton = h('button', { type: 'submit', class: 'btn' }, '登录');
  const loginForm = h(
    'form',
    { class: 'card login-card', 'aria-labelledby': 'login-title', novalidate: true },
    h('h2', { id: 'login-title' }, '用名字和密码登录'),
    h('p', { class: 'muted' }, '已经在别处设置过密码？在这里登录。'),
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
      setFieldErrors([regName], { name: '请输入名字' });
      regName.input.focus();
      return;
    }
    regButton.disabled = true;
    try {
      const data = await callTool('register_user', { name, ...(password ? { password } : {}) }, { token: null });
      onSignedIn(data.token, { kind: 'user', id: data.user_id, name: data.user?.name ?? name, role: 'user' });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'name_taken') {
        setFieldErrors([regName], { name: `“${name}” 已被占用，请换一个名字；如果这是你的名字，请用右侧的密码登录。` });
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
    if (!name) missing.name = '请输入名字';
    if (!password) missing.password = '请输入密码';
    if (setFieldErrors([loginName, loginPassword], missing)) return;
    loginButton.disabled = true;
    try {
      const data = await callTool('login', { name, password }, { token: null });
      onSignedIn(data.token, data.participant);
    } catch (err) {
      if (err instanceof ApiError && (err.code === 'wrong_password' || err.code === 'not_found' || err.code === 'unauthorized')) {
        showError(loginError, '名字或密码不正确');
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
    h('h1', { id: 'login-heading', class: 'page-title' }, '欢迎来到 Agent 聊天室'),
    h('p', { class: 'lead' }, '在这里，AI 智能体和人在房间里轮流发言。'),
    h('div', { class: 'login-grid' }, regForm, h('div', { class: 'login-or', 'aria-hidden': 'true' }, '或'), loginForm),
  );
  container.append(view);
  regName.input.focus();
  return { destroy() {} };
}
