// @ts-check
// The message composer: Enter sends, Shift+Enter breaks the line, "@" completes member names,
// one file can be attached (uploaded on send), and a message being replied to is shown above.
import { h, uniqueId } from './dom.js';
import { roleLabel, t } from './i18n.js';
import { icon } from './icons.js';
import { plainText } from './markdown.js';

const MAX_SUGGESTIONS = 8;
/** "@query" right before the caret, at the start or after whitespace / punctuation. */
const MENTION_BEFORE_CARET = /(?:^|[\s(（，。、,.!?！？:：;；"'“‘])@([^\s@]*)$/u;

export class Composer {
  /**
   * @param {object} opts
   * @param {() => any[]} opts.members
   * @param {() => string} opts.me
   * @param {(draft: { text: string, file: File|null, replyTo: any }) => Promise<boolean>} opts.onSend  true = sent (clear)
   */
  constructor({ members, me, onSend }) {
    this.members = members;
    this.me = me;
    this.onSend = onSend;
    /** @type {File|null} */
    this.file = null;
    /** @type {any} the message being answered (response_to) */
    this.replyTo = null;
    /** @type {Array<{ name: string, role: string, online: boolean }>} */
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
      placeholder: t('composer.placeholder'),
      'aria-label': t('composer.label'),
      'aria-autocomplete': 'list',
      'aria-controls': listId,
      'aria-expanded': 'false',
      'aria-describedby': `${inputId}-hint`,
      autocomplete: 'off',
    });
    this.list = h('ul', { class: 'mention-list', id: listId, role: 'listbox', 'aria-label': t('composer.mentionList'), hidden: true });
    this.fileInput = h('input', { type: 'file', class: 'visually-hidden', tabindex: '-1', 'aria-hidden': 'true' });
    this.attachBtn = h('button', { type: 'button', class: 'btn btn-ghost composer-attach', 'aria-label': t('composer.attach'), title: t('composer.attach') }, icon('paperclip', { size: 20 }));
    this.fileChip = h('span', { class: 'file-chip', hidden: true });
    this.sendBtn = h('button', { type: 'submit', class: 'btn btn-primary composer-send' }, t('composer.send'));
    this.replyChip = h('div', { class: 'reply-chip', hidden: true });
    this.error = h('p', { class: 'composer-error', role: 'alert', hidden: true });
    this.notice = h('p', { class: 'composer-notice muted', hidden: true });
    this.el = h(
      'form',
      { class: 'composer', 'aria-label': t('composer.formLabel'), novalidate: true },
      this.notice,
      this.error,
      this.replyChip,
      h('div', { class: 'composer-row' }, this.attachBtn, h('div', { class: 'composer-field' }, this.list, this.input), this.sendBtn),
      this.fileChip,
      h('p', { class: 'composer-hint muted', id: `${inputId}-hint` }, t('composer.hint')),
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

  /** Shows (or clears) the message being replied to. @param {any} message */
  setReply(message) {
    this.replyTo = message;
    this.replyChip.hidden = !message;
    if (!message) return this.replyChip.replaceChildren();
    const cancel = h('button', { type: 'button', class: 'chip-remove', 'aria-label': t('composer.cancelReply') }, '×');
    cancel.addEventListener('click', () => {
      this.setReply(null);
      this.input.focus();
    });
    this.replyChip.replaceChildren(
      icon('reply', { size: 14 }),
      h('span', { class: 'reply-chip-text' }, t('composer.replyingTo', { name: message.sender }), ' ', h('span', { class: 'muted' }, plainText(message.text_content, 80))),
      cancel,
    );
    this.input.focus();
  }

  /** Enables or disables writing; `reason` is shown when disabled. @param {boolean} enabled @param {string} [reason] */
  setEnabled(enabled, reason = '') {
    this.input.disabled = !enabled;
    this.sendBtn.disabled = !enabled || this.sending;
    this.attachBtn.disabled = !enabled;
    this.notice.textContent = reason;
    this.notice.hidden = enabled || !reason;
  }

  /** @param {File|null} file */
  setFile(file) {
    this.file = file;
    this.fileChip.replaceChildren();
    this.fileChip.hidden = !file;
    if (!file) {
      this.fileInput.value = '';
      return;
    }
    const remove = h('button', { type: 'button', class: 'chip-remove', 'aria-label': t('composer.removeFile', { name: file.name }) }, '×');
    remove.addEventListener('click', () => {
      this.setFile(null);
      this.input.focus();
    });
    this.fileChip.append(icon('paperclip', { size: 14 }), h('span', {}, `${file.name} (${formatBytes(file.size)})`), remove);
  }

  /** @param {string} text */
  showError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }

  async send() {
    if (this.sending || this.input.disabled) return;
    const text = this.input.value;
    if (!text.trim() && !this.file) {
      this.showError(t('composer.empty'));
      return;
    }
    this.showError('');
    this.sending = true;
    this.sendBtn.disabled = true;
    this.sendBtn.textContent = t('composer.sending');
    try {
      const sent = await this.onSend({ text, file: this.file, replyTo: this.replyTo });
      if (sent) {
        this.input.value = '';
        this.setFile(null);
        this.setReply(null);
        this.closeSuggestions();
      }
    } finally {
      this.sending = false;
      this.sendBtn.disabled = this.input.disabled;
      this.sendBtn.textContent = t('composer.send');
      this.input.focus();
    }
  }

  /** @param {KeyboardEvent} e */
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
    if (e.key === 'Escape' && this.replyTo) {
      e.preventDefault();
      this.setReply(null);
      return;
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
          h('span', { class: 'muted mention-role' }, roleLabel(s.role)),
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

  /** @param {number} i */
  setActive(i) {
    this.active = i;
    [...this.list.children].forEach((li, j) => li.setAttribute('aria-selected', String(j === i)));
    const current = this.list.children[i];
    if (current) {
      this.input.setAttribute('aria-activedescendant', current.id);
      current.scrollIntoView({ block: 'nearest' });
    }
  }

  /** @param {{ name: string }} suggestion */
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

/** @param {number} n */
function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
