/**
 * C0 controls but newline and tab, DEL, and C1 controls. ESC (and C1's CSI, U+009B) starts the
 * sequences that clear a terminal, rewrite lines already shown or retitle the window.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * What the CLI prints comes largely from outside: session ids and turn text from agents, memories
 * and skills from LLMs, upstream error messages. Each control character is shown as its `\u`
 * escape instead of reaching the terminal: visible, inert, and JSON output stays valid JSON with
 * the same values (control characters can only sit inside its strings, where `\u` is an escape).
 */
export function terminalText(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
