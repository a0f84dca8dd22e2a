// The message composer: Enter sends, Shift+Enter breaks the line, "@" completes member names,
// and one file can be attached (uploaded on send).
import { h, uniqueId } from './dom.js';
import { icon } from './icons.js';

const MAX_SUGGESTIONS = 8;
/** "@query" right before the caret, at the start or after whitespace / punctuation. */
const MENTION_BEFORE_CARET = /(?:^|[\s(（，。、,.!?！？:：;；"'“‘])@([^\s@]*)$/u;

export class Composer {
  /**
   * @param {object} opts
   * @param {() => object[]} opts.members
   * @param {() => string} opts.me
   * @param {(draft: { text: string, file: File|null }) => Promise<boolean>} opts.onSend  true = sent (clear)
   */
  constructor({ members, me, onSend }) {
    this.members = members;
    this.me = me;
    this.onSend = onSend;
    this.file = null;
    this.suggestions = [];
    this.active = -1;
    this.mentionStart = -1;
    this.sending = false;

    const inputId = uniqueId('composer');
    const listId = `${inputId}-list`;
    this.input = h('textarea', {
      id: inputId,
      class: 'composer-input',
      rows: '2',
      placeholder: '输入消息，@ 提及成员',
      'aria-label': '消息内容',
      'aria-autocomplete': 'list',
      'aria-controls': listId,
      'aria-expanded': 'false',
      'aria-describedby': `${inputId}-hint`,
      autocomplete: 'off',
    });
    this.list = h('ul', { class: 'mention-list', id: listId, role: 'listbox', 'aria-label': '提及成员', hidden: true });
    this.fileInput = h('input', { type: 'file', class: 'visually-hidden', tabindex: '-1', 'aria-hidden': 'true' });
    this.attachBtn = h('button', { type: 'button', class: 'btn btn-ghost composer-attach', 'aria-label': '添加附件', title: '添加附件' }, icon('paperclip', { size: 20 }));
    this.fileChip = h('span', { class: 'file-chip', hidden: true });
    this.sendBtn = h('button', { type: 'submit', class: 'btn btn-primary composer-send' }, '发送');
    this.error = h('p', { class: 'composer-error', role: 'alert', hidden: true });
    this.notice = h('p', { class: 'composer-notice muted', hidden: true });
    this.el = h(
      'form',
      { class: 'composer', 'aria-label': '发送消息', novalidate: true },
      this.notice,
      this.error,
      h('div', { class: 'composer-row' }, this.attachBtn, h('div', { class: 'composer-field' }, this.list, this.input), this.sendBtn),
      this.fileChip,
      h('p', { class: 'composer-hint muted', id: `${inputId}-hint` }, 'Enter 发送 · Shift+Enter 换行 · 输入 @ 选择成员'),
      this.fileInput,
    );

    this.el.addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
    this.input.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.input.addEventListener('input', () => this.updateSuggestions());
    this.input.addEventListener('click', () => this.updateSuggestions());
    this.input.addEventListener('blur', () => setTimeout(() => this.closeSuggestions(), 150));
    this.attachBtn.addEventListener('click', () => this.fileInput.click());
    this.fileInput.addEventListener('change', () => this.setFile(this.fileInput.files?.[0] ?? null));
  }

  /** Enables or disables writing; `reason` is shown when disabled. */
  setEnabled(enabled, reason = '') {
    this.input.disabled = !enabled;
    this.sendBtn.disabled = !enabled || this.sending;
    this.attachBtn.disabled = !enabled;
    this.notice.textContent = reason;
    this.notice.hidden = enabled || !reason;
  }

  setFile(file) {
    this.file = file;
    this.fileChip.replaceChildren();
    this.fileChip.hidden = !file;
    if (!file) {
      this.fileInput.value = '';
      return;
    }
    const remove = h('button', { type: 'button', class: 'chip-remove', 'aria-label': `移除附件 ${file.name}` }, '×');
    remove.addEventListener('click', () => {
      this.setFile(null);
      this.input.focus();
    });
    this.fileChip.append(icon('paperclip', { size: 14 }), h('span', {}, `${file.name}（${formatBytes(file.size)}）`), remove);
  }

  showError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }

  async send() {
    if (this.sending || this.input.disabled) return;
    const text = this.input.value;
    if (!text.trim() && !this.file) {
      this.showError('消息不能为空');
      return;
    }
    this.showError('');
    this.sending = true;
    this.sendBtn.disabled = true;
    this.sendBtn.textContent = '发送中…';
    try {
      const sent = await this.onSend({ text, file: this.file });
      if (sent) {
        this.input.value = '';
        this.setFile(null);
        this.closeSuggestions();
      }
    } finally {
      this.sending = false;
      this.sendBtn.disabled = this.input.disabled;
      this.sendBtn.textContent = '发送';
      this.input.focus();
    }
  }

  onKeyDown(e) {
    const open = !this.list.hidden && this.suggestions.length > 0;
    if (open) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = this.suggestions.length;
        this.setActive((this.active + (e.key === 'ArrowDown' ? 1 : -1) + n) % n);
        return;
      }
      if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey && !e.isComposing && this.active >= 0) {
        e.preventDefault();
        this.choose(this.suggestions[this.active]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        this.closeSuggestions();
        return;
      }
    }
    // Enter sends; Shift+Enter is a new line; never while an IME is composing (Chinese input).
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      this.send();
    }
  }

  updateSuggestions() {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const before = this.input.value.slice(0, caret);
    const match = MENTION_BEFORE_CARET.exec(before);
    if (!match) return this.closeSuggestions();
    const query = match[1].toLowerCase();
    const me = (this.me() || '').toLowerCase();
    const names = this.members()
      .filter((m) => m.name.toLowerCase() !== me)
      .map((m) => ({ name: m.name, role: m.role, online: m.status === 'online' }));
    const starts = names.filter((m) => m.name.toLowerCase().startsWith(query));
    const contains = names.filter((m) => !m.name.toLowerCase().startsWith(query) && m.name.toLowerCase().includes(query));
    this.suggestions = [...starts, ...contains].slice(0, MAX_SUGGESTIONS);
    this.mentionStart = caret - match[1].length - 1;
    if (this.suggestions.length === 0) return this.closeSuggestions();
    this.list.replaceChildren(
      ...this.suggestions.map((s, i) => {
        const li = h(
          'li',
          { role: 'option', id: `${this.list.id}-${i}`, class: 'mention-option', 'aria-selected': 'false' },
          h('span', { class: `status-dot ${s.online ? 'online' : 'offline'}`, 'aria-hidden': 'true' }),
          h('span', { class: 'mention-name' }, s.name),
          h('span', { class: 'muted mention-role' }, s.role === 'ai_agent' ? '智能体' : '用户'),
        );
        li.addEventListener('mousedown', (e) => {
          e.preventDefault();
          this.choose(s);
        });
        return li;
      }),
    );
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.setActive(0);
  }

  setActive(i) {
    this.active = i;
    [...this.list.children].forEach((li, j) => li.setAttribute('aria-selected', String(j === i)));
    const current = this.list.children[i];
    if (current) {
      this.input.setAttribute('aria-activedescendant', current.id);
      current.scrollIntoView({ block: 'nearest' });
    }
  }

  choose(suggestion) {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const value = this.input.value;
    const insert = `@${suggestion.name} `;
    this.input.value = value.slice(0, this.mentionStart) + insert + value.slice(caret);
    const pos = this.mentionStart + insert.length;
    this.input.setSelectionRange(pos, pos);
    this.closeSuggestions();
    this.input.focus();
  }

  closeSuggestions() {
    this.list.hidden = true;
    this.suggestions = [];
    this.active = -1;
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }
}

function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
