// @ts-check
// Message text → safe DOM: Markdown with marked, then DOMPurify. No script, no on* handler and
// no javascript: link survives; links open in a new tab with rel=noopener; @mentions of room
// members are highlighted.
//
// Raw HTML inside a message is shown as text, except bare formatting tags without attributes
// (<br>, <b>, <kbd>, <details>, …). So an attribute such as onerror never even reaches the HTML
// parser (Chromium reports CSP violations for handlers it parses, even in DOMPurify's inert
// document); DOMPurify then cleans what Markdown itself produced.
//
// Code blocks are highlighted with highlight.js (its own ESM bundle, served from the package)
// and get a copy button.
// The /vendor/ paths exist only on the server (src/transports/http.ts serves them from
// node_modules), so the type check cannot follow them.
// @ts-ignore
import hljs from '/vendor/highlight.min.js';
// @ts-ignore
import DOMPurify from '/vendor/purify.es.mjs';
// @ts-ignore
import { Marked } from '/vendor/marked.esm.js';
import { h } from './dom.js';
import { t } from './i18n.js';
import { icon } from './icons.js';

const BARE_TAG = /<\/?(?:br|b|i|u|s|em|strong|del|ins|sub|sup|kbd|mark|small|details|summary|hr|p)\s*\/?>/gi;

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/** An HTML token of the Markdown: kept only when it is nothing but bare formatting tags. */
function htmlToken(text) {
  const rest = text.replace(BARE_TAG, '');
  return /<[a-z!?/]/i.test(rest) ? escapeHtml(text) : text;
}

const markdown = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html(token) {
      return htmlToken(token.text ?? token.raw ?? '');
    },
  },
});

const SAFE_URL = /^(?:https?:|mailto:|\/(?!\/)|#)/i;

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href');
    if (href !== null && !SAFE_URL.test(href.trim())) node.removeAttribute('href');
    if (node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  } else if (node.tagName === 'IMG') {
    const src = node.getAttribute('src');
    if (src !== null && !/^(?:https?:|\/(?!\/))/i.test(src.trim())) node.removeAttribute('src');
    node.setAttribute('referrerpolicy', 'no-referrer');
    node.setAttribute('loading', 'lazy');
  }
});

const PURIFY_OPTIONS = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'frame', 'object', 'embed', 'link', 'meta', 'base', 'dialog', 'video', 'audio', 'source', 'picture'],
  FORBID_ATTR: ['style', 'id', 'name', 'srcset', 'formaction', 'autofocus', 'tabindex'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

/** Markdown text → sanitised DocumentFragment. `names`: member names to highlight after "@". */
export function renderMarkdown(text, { names = [], me = null } = {}) {
  let html;
  try {
    html = markdown.parse(String(text ?? ''));
  } catch {
    html = '';
  }
  const fragment = /** @type {DocumentFragment} */ (/** @type {unknown} */ (DOMPurify.sanitize(html, PURIFY_OPTIONS)));
  if (names.length > 0) highlightMentions(fragment, names, me);
  for (const pre of fragment.querySelectorAll('pre')) decorateCode(pre);
  return fragment;
}

/** Auto-detection costs time per character: longer blocks stay plain unless they name a language. */
const AUTO_DETECT_MAX = 4000;

/** Highlights a code block (its text only: highlight.js escapes it) and adds a copy button. @param {HTMLPreElement} pre */
function decorateCode(pre) {
  const code = pre.querySelector('code');
  if (!code) return;
  const text = code.textContent || '';
  const lang = /(?:^|\s)language-([\w+#-]+)/.exec(code.className)?.[1];
  try {
    const result = lang && hljs.getLanguage(lang) ? hljs.highlight(text, { language: lang, ignoreIllegals: true }) : text.length <= AUTO_DETECT_MAX ? hljs.highlightAuto(text) : null;
    if (result) {
      code.innerHTML = result.value;
      code.classList.add('hljs');
      if (result.language) code.dataset.language = result.language;
    }
  } catch {
    // leave the block plain
  }
  const copy = h('button', { type: 'button', class: 'btn btn-ghost btn-tiny code-copy', 'aria-label': t('code.copy'), title: t('code.copy') }, icon('copy', { size: 13 }), h('span', {}, t('code.copy')));
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      /** @type {HTMLElement} */ (copy.lastChild).textContent = t('code.copied');
    } catch {
      /** @type {HTMLElement} */ (copy.lastChild).textContent = t('code.copyFailed');
    }
    setTimeout(() => {
      /** @type {HTMLElement} */ (copy.lastChild).textContent = t('code.copy');
    }, 1500);
  });
  const wrap = h('div', { class: 'code-block' });
  pre.replaceWith(wrap);
  wrap.append(copy, pre);
}

/** Plain text of a message for previews (search results, notes). */
export function plainText(text, max = 140) {
  const oneLine = String(text ?? '').replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function highlightMentions(root, names, me) {
  const sorted = [...names].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const pattern = new RegExp(`@(${sorted.join('|')})(?=$|[\\s\\p{P}\\p{S}])`, 'giu');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      return node.parentElement?.closest('code, pre, a') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
    },
  });
  const targets = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeValue.includes('@')) targets.push(node);
  }
  for (const node of targets) {
    const text = node.nodeValue;
    pattern.lastIndex = 0;
    let last = 0;
    let match;
    const parts = [];
    while ((match = pattern.exec(text))) {
      if (match.index > last) parts.push(document.createTextNode(text.slice(last, match.index)));
      const span = document.createElement('span');
      span.className = me && match[1].toLowerCase() === me.toLowerCase() ? 'mention mention-me' : 'mention';
      span.textContent = match[0];
      parts.push(span);
      last = match.index + match[0].length;
    }
    if (parts.length === 0) continue;
    if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
    /** @type {ChildNode} */ (node).replaceWith(...parts);
  }
}
