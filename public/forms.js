// @ts-check
// Labelled form fields with an error line beside them (validation issues map onto `name`).
import { h, uniqueId } from './dom.js';

/**
 * field({ label, name, type?, hint?, as?: 'input'|'textarea'|'select', options?, ...attributes })
 * → { row, input, error, name }
 */
/**
 * @param {{ label: string, name: string, type?: string, hint?: string, as?: string, options?: any[], [attr: string]: any }} opts
 */
export function field({ label, name, type = 'text', hint, as = 'input', options = [], ...attrs }) {
  const id = uniqueId(`f-${name}`);
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : null;
  let input;
  if (as === 'select') {
    input = h('select', { id, name, ...attrs }, options.map((o) => h('option', { value: o.value, selected: o.selected }, o.label)));
  } else if (as === 'textarea') {
    input = h('textarea', { id, name, ...attrs });
  } else {
    input = h('input', { id, name, type, ...attrs });
  }
  input.setAttribute('aria-describedby', [hintId, errorId].filter(Boolean).join(' '));
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const isCheck = type === 'checkbox';
  const row = h(
    'div',
    { class: `field${isCheck ? ' field-check' : ''}`, dataset: { field: name } },
    isCheck ? h('label', { for: id }, input, ' ', label) : [h('label', { for: id }, label), input],
    hint ? h('p', { class: 'field-hint', id: hintId }, hint) : null,
    error,
  );
  return { row, input, error, name };
}

/**
 * Shows `errors[name]` beside each field (clears the others). Returns true when any field got
 * an error; the first such field gets focus.
 */
export function setFieldErrors(fields, errors) {
  let first = null;
  for (const f of fields) {
    const text = errors[f.name];
    f.error.textContent = text || '';
    f.error.hidden = !text;
    f.row.classList.toggle('has-error', Boolean(text));
    if (text) {
      f.input.setAttribute('aria-invalid', 'true');
      first ??= f;
    } else {
      f.input.removeAttribute('aria-invalid');
    }
  }
  if (first) first.input.focus();
  return first !== null;
}
