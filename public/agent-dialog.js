// @ts-check
// "Add an agent" for the open room: one-line commands to copy (CLI agents through
// `agent-chatroom cli-agent`, ACP sessions through `acp-agent`, A2A agents through `a2a-agent`,
// the ready-to-run `agent-chatroom agent`), the MCP settings for Claude Code (also as a channel
// that pushes turns into an interactive session), Cursor and Codex. The texts themselves come
// from agent-commands.js.
import { agentCommands } from './agent-commands.js';
import { openDialog } from './dialog.js';
import { h, uniqueId } from './dom.js';
import { t } from './i18n.js';
import { icon } from './icons.js';

/** A block of text with a copy button. @param {string} label @param {string} text @param {string} key */
function copyBlock(label, text, key) {
  const code = h('code', {}, text);
  const btn = h('button', { type: 'button', class: 'btn btn-small copy-btn', 'aria-label': t('agents.copyWhat', { what: label }) }, icon('copy', { size: 14 }), h('span', {}, t('code.copy')));
  btn.addEventListener('click', async () => {
    const span = /** @type {HTMLElement} */ (btn.lastChild);
    try {
      await navigator.clipboard.writeText(code.textContent || '');
      span.textContent = t('code.copied');
    } catch {
      // No clipboard (an insecure origin): select the text so Ctrl+C works.
      const range = document.createRange();
      range.selectNodeContents(code);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      span.textContent = t('code.copyFailed');
    }
    setTimeout(() => (span.textContent = t('code.copy')), 1500);
  });
  return h('div', { class: 'copy-block', dataset: { key } }, h('div', { class: 'copy-block-head' }, h('span', { class: 'copy-label' }, label), btn), h('pre', {}, code));
}

/** @param {{ room: any }} opts */
export function openAgentDialog({ room }) {
  const url = location.origin;
  const nameId = uniqueId('agent-name');
  const nameInput = h('input', { id: nameId, type: 'text', name: 'agent_name', value: 'Claude', maxlength: 32, autocomplete: 'off', spellcheck: 'false' });
  const presetId = uniqueId('agent-preset');
  const preset = h(
    'select',
    { id: presetId, name: 'preset' },
    h('option', { value: 'claude' }, 'Claude Code'),
    h('option', { value: 'codex' }, 'Codex CLI'),
    h('option', { value: 'gemini' }, 'Gemini CLI'),
  );
  const blocks = h('div', { class: 'agent-blocks' });
  const render = () => {
    const name = /^[\p{L}\p{M}\p{Nd}_.-]{1,32}$/u.test(nameInput.value.trim()) ? nameInput.value.trim() : 'NAME';
    const c = agentCommands({ url, roomId: room.room_id, name, preset: /** @type {any} */ (preset.value), hasPassword: room.has_password });
    blocks.replaceChildren(
      h('h3', {}, t('agents.cliTitle')),
      h('p', { class: 'muted' }, t('agents.cliHelp')),
      copyBlock(t('agents.cliLabel'), c.cli, 'cli'),
      h('h3', {}, t('agents.acpTitle')),
      h('p', { class: 'muted' }, t('agents.acpHelp')),
      copyBlock(t('agents.acpLabel'), c.acp, 'acp'),
      h('h3', {}, t('agents.channelTitle')),
      h('p', { class: 'muted' }, t('agents.channelHelp')),
      copyBlock(t('agents.channelJson'), c.channelJson, 'channel-json'),
      copyBlock(t('agents.channelLaunch'), c.channelLaunch, 'channel-launch'),
      copyBlock(t('agents.promptLabel'), t('agents.channelPrompt', { name, room: room.room_id }), 'channel-prompt'),
      h('h3', {}, t('agents.mcpTitle')),
      h('p', { class: 'muted' }, t('agents.mcpHelp')),
      copyBlock(t('agents.claudeCmd'), c.claudeMcp, 'claude-mcp'),
      copyBlock(t('agents.claudeJson'), c.claudeJson, 'claude-json'),
      copyBlock(t('agents.cursorJson'), c.cursorJson, 'cursor-json'),
      copyBlock(t('agents.codexToml'), c.codexToml, 'codex-toml'),
      copyBlock(t('agents.stdioJson'), c.stdioJson, 'stdio-json'),
      copyBlock(t('agents.promptLabel'), t('agents.prompt', { name, room: room.room_id }), 'prompt'),
      h('h3', {}, t('agents.a2aTitle')),
      h('p', { class: 'muted' }, t('agents.a2aHelp')),
      copyBlock(t('agents.a2aLabel'), c.a2a, 'a2a'),
      h('h3', {}, t('agents.readyTitle')),
      h('p', { class: 'muted' }, t('agents.readyHelp')),
      copyBlock(t('agents.readyLabel'), c.agent, 'agent'),
      copyBlock(t('agents.echoLabel'), c.agentEcho, 'agent-echo'),
    );
  };
  nameInput.addEventListener('input', render);
  preset.addEventListener('change', render);
  render();
  return openDialog({
    title: t('agents.title'),
    className: 'dialog-wide agent-dialog',
    body: [
      h('p', {}, t('agents.intro', { room: room.room_name })),
      h('p', { class: 'room-id-line' }, t('agents.roomId'), ' ', h('code', { class: 'room-id' }, room.room_id)),
      h(
        'div',
        { class: 'form-grid' },
        h('div', { class: 'field' }, h('label', { for: nameId }, t('agents.name')), nameInput),
        h('div', { class: 'field' }, h('label', { for: presetId }, t('agents.preset')), preset),
      ),
      blocks,
    ],
  });
}
